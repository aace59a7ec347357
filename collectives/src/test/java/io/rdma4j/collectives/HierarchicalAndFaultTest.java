package io.rdma4j.collectives;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Multi-process tests of the two-hop allreduce (two pretend hosts of two ranks each: TCP between
 * them, shared memory within), the gradient bucketer, mismatch detection, rank death and abort.
 */
class HierarchicalAndFaultTest {

    @Test
    void twoHopOnTwoHostsOfTwoRanks() throws Exception {
        MultiProcessHarness.run(4, "tcp", Map.of("RDMA4J_TEST_RANKS_PER_HOST", "2"), Duration.ofMinutes(3),
                "algo=twohop");
    }

    @Test
    void twoHopOnThreeHostsOfTwoRanks() throws Exception {
        MultiProcessHarness.run(6, "tcp", Map.of("RDMA4J_TEST_RANKS_PER_HOST", "2", "RDMA4J_CHUNK_BYTES", "65536"),
                Duration.ofMinutes(3), "algo=twohop");
    }

    @Test
    void gradientBucketerOverTcpAndShm() throws Exception {
        MultiProcessHarness.run(3, "tcp", Map.of(), Duration.ofMinutes(2), "bucketer");
        MultiProcessHarness.run(2, "shm", Map.of(), Duration.ofMinutes(2), "bucketer");
    }

    private static final Map<String, String> FAULT_ENV = Map.of("RDMA4J_TIMEOUT_MS", "15000");

    private static void fault(int n, String provider, String which) throws Exception {
        MultiProcessHarness.expectFault(n, provider, FAULT_ENV, Duration.ofMinutes(1), which);
    }

    @Test
    void mismatchedCountDetectedOnEveryRank() throws Exception {
        fault(3, "tcp", "mismatch-count");
    }

    @Test
    void mismatchedTypeOpAndKindDetected() throws Exception {
        fault(2, "shm", "mismatch-dtype");
        fault(4, "tcp", "mismatch-op");
        fault(4, "shm", "mismatch-kind");
        fault(2, "tcp", "mismatch-eager");
    }

    @Test
    void deadRankNamedOnEveryRankTcp() throws Exception {
        fault(4, "tcp", "death");
    }

    @Test
    void deadRankNamedOnEveryRankShm() throws Exception {
        fault(4, "shm", "death");
        fault(4, "shm", "death-small");
    }

    @Test
    void mismatchesDetectedOnTheSharedWindowPath() throws Exception {
        fault(3, "shm", "mismatch-count");
        fault(2, "shm", "mismatch-op");
    }

    @Test
    void silentRankBlamedAfterTimeout() throws Exception {
        for (String provider : new String[] {"tcp", "shm"}) { // shm: waits on the shared window
            String[] out = MultiProcessHarness.runFault(3, provider, Map.of("RDMA4J_TIMEOUT_MS", "4000"),
                    Duration.ofMinutes(1), "hang");
            for (int r = 0; r < 3; r++) {
                int rr = r;
                assertTrue(out[r].contains("FAULT OK hang"), () -> provider + " rank " + rr + ":\n" + out[rr]);
            }
        }
    }

    @Test
    void abortUnblocksEveryRank() throws Exception {
        fault(3, "tcp", "abort");
        fault(2, "shm", "abort-local");
    }
}
