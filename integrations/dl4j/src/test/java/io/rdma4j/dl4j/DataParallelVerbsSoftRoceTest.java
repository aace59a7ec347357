package io.rdma4j.dl4j;

import io.rdma4j.transport.testing.RankProcesses;
import io.rdma4j.verbs.testing.SoftRoce;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.api.buffer.DataType;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * DL4J data-parallel training over the verbs provider (Soft-RoCE guest): the gradient allreduce
 * registers ND4J's own gradient buffer, and two ranks end bit-identical to the single-process run.
 */
@Tag(SoftRoce.TAG)
class DataParallelVerbsSoftRoceTest {
    private static final int STEPS = 3;
    private static final int ROWS = 8;

    @TempDir
    Path out;

    @BeforeAll
    static void requireDevice() {
        SoftRoce.requireDeviceOrSkip();
    }

    @Test
    void twoRanksOverVerbsEqualTheSingleProcessRunBitForBit() throws Exception {
        Map<String, String> env = Map.of("RDMA4J_TRANSPORT", "verbs", "RDMA4J_TIMEOUT_MS", "120000",
                "OMP_NUM_THREADS", "1", "JDK_JAVA_OPTIONS", "--sun-misc-unsafe-memory-access=allow");
        try (RankProcesses p = RankProcesses.launch(2, TrainRank.class, env, "mlp", "FLOAT", "adam",
                Integer.toString(STEPS), Integer.toString(ROWS), out.toString(), "true")) {
            p.awaitSuccess(Duration.ofMinutes(8));
            byte[] reference = GradientAccumulationReference.train("mlp", DataType.FLOAT, "adam", STEPS, 2, ROWS);
            for (int r = 0; r < 2; r++) {
                assertTrue(p.output(r).contains("steps " + STEPS + " zeroCopy true provider verbs"), p.output(r));
                assertArrayEquals(reference, Files.readAllBytes(out.resolve("rank" + r + ".bin")), "rank " + r);
            }
        }
    }
}
