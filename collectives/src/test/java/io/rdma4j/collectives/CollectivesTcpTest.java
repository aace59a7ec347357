package io.rdma4j.collectives;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

/**
 * Every collective over the TCP provider, ranks in separate JVMs, checked against the
 * independent reference (see {@link io.rdma4j.collectives.scenario.MatrixScenario}).
 */
class CollectivesTcpTest {

    @Test
    void twoRanks() throws Exception {
        MultiProcessHarness.run(2, "tcp", Map.of(), Duration.ofMinutes(3), "full", "split");
    }

    @Test
    void threeRanks() throws Exception {
        MultiProcessHarness.run(3, "tcp", Map.of(), Duration.ofMinutes(3), "full", "split");
    }

    /** 16M+ element vectors with the default pipeline chunking and two ring channels. */
    @Test
    void largeVectorsThreeRanksTwoChannels() throws Exception {
        java.util.Map<String, String> env = new java.util.HashMap<>(MultiProcessHarness.DEFAULT_CHUNKING);
        env.put("RDMA4J_CHANNELS", "2");
        MultiProcessHarness.run(3, "tcp", env, Duration.ofMinutes(3), "large");
    }

    @Test
    void fiveRanks() throws Exception {
        MultiProcessHarness.run(5, "tcp", Map.of(), Duration.ofMinutes(3), "reduced", "split");
    }

    @Test
    void eightRanks() throws Exception {
        MultiProcessHarness.run(8, "tcp", Map.of(), Duration.ofMinutes(3), "reduced", "split");
    }
}
