package io.rdma4j.djl;

import io.rdma4j.transport.testing.RankProcesses;
import io.rdma4j.verbs.testing.SoftRoce;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** DJL data-parallel training over the verbs provider (Soft-RoCE guest): two ranks end bit-identical to the single-process run. */
@Tag(SoftRoce.TAG)
class DataParallelVerbsSoftRoceTest {
    private static final int STEPS = 3;
    private static final int ROWS = 8;

    @TempDir
    Path out;

    @BeforeAll
    static void requireDevice() {
        SoftRoce.requireDeviceOrSkip();
        System.setProperty("ai.djl.offline", "true"); // the guest's JUnit runs without the build's DJL_OFFLINE
    }

    @Test
    void twoRanksOverVerbsEqualTheSingleProcessRunBitForBit() throws Exception {
        Map<String, String> env = Map.of("RDMA4J_TRANSPORT", "verbs", "RDMA4J_TIMEOUT_MS", "120000",
                "OMP_NUM_THREADS", "1", "DJL_OFFLINE", "true");
        try (RankProcesses p = RankProcesses.launch(2, TrainDjlRank.class, env, "adam", Integer.toString(STEPS),
                Integer.toString(ROWS), out.toString())) {
            p.awaitSuccess(Duration.ofMinutes(8));
            byte[] reference = GradientAccumulationReference.train("adam", STEPS, 2, ROWS);
            for (int r = 0; r < 2; r++) {
                assertTrue(p.output(r).contains("steps " + STEPS + "\nprovider verbs"), p.output(r));
                assertArrayEquals(reference, Files.readAllBytes(out.resolve("rank" + r + ".bin")), "rank " + r);
            }
        }
    }
}
