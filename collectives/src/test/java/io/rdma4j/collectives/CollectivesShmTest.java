package io.rdma4j.collectives;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

/** Every collective over the shared-memory provider, ranks in separate JVMs. */
class CollectivesShmTest {

    @Test
    void twoRanks() throws Exception {
        MultiProcessHarness.run(2, "shm", Map.of(), Duration.ofMinutes(3), "full");
    }

    @Test
    void fourRanks() throws Exception {
        MultiProcessHarness.run(4, "shm", Map.of(), Duration.ofMinutes(3), "full", "split");
    }

    /** 16M+ element vectors with the default pipeline chunking. */
    @Test
    void largeVectorsFourRanks() throws Exception {
        MultiProcessHarness.run(4, "shm", MultiProcessHarness.DEFAULT_CHUNKING, Duration.ofMinutes(3), "large");
    }

    @Test
    void sixRanks() throws Exception {
        MultiProcessHarness.run(6, "shm", Map.of(), Duration.ofMinutes(3), "reduced", "split");
    }

    @Test
    void sevenRanks() throws Exception {
        MultiProcessHarness.run(7, "shm", Map.of(), Duration.ofMinutes(3), "reduced");
    }

}
