package io.rdma4j.collectives;

import io.rdma4j.verbs.testing.SoftRoce;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

/**
 * Every collective over the verbs provider, ranks in separate JVMs, against the same independent
 * reference as the TCP and shared-memory runs. Needs a verbs device, so it runs in the Soft-RoCE
 * guest (scripts/softroce-test); every rank uses the first device, rxe0, whose loopback connects
 * the QPs of each pair.
 */
@Tag(SoftRoce.TAG)
class CollectivesVerbsSoftRoceTest {
    /** The emulated guest runs the JVMs 10-50x slower than the host. */
    private static final Duration GUEST_LIMIT = Duration.ofMinutes(10);

    @BeforeAll
    static void requireDevice() {
        SoftRoce.requireDeviceOrSkip();
    }

    @Test
    void twoRanksEveryCollectiveTypeAndOp() throws Exception {
        MultiProcessHarness.run(2, "verbs", Map.of(), GUEST_LIMIT, "full");
    }

    @Test
    void threeRanksReducedMatrixAndSplit() throws Exception {
        MultiProcessHarness.run(3, "verbs", Map.of(), GUEST_LIMIT, "reduced", "split");
    }

    @Test
    void mismatchedCountDetectedOnEveryRank() throws Exception {
        MultiProcessHarness.expectFault(2, "verbs", Map.of("RDMA4J_TIMEOUT_MS", "30000"), GUEST_LIMIT, "mismatch-count");
    }

    @Test
    void deadRankNamedOnEveryRank() throws Exception {
        MultiProcessHarness.expectFault(3, "verbs", Map.of("RDMA4J_TIMEOUT_MS", "30000"), GUEST_LIMIT, "death");
    }
}
