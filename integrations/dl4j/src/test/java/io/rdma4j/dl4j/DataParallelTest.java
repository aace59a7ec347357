package io.rdma4j.dl4j;

import io.rdma4j.transport.testing.RankProcesses;
import io.rdma4j.transport.testing.TimeLimits;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.api.buffer.DataType;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Data-parallel DL4J training across separate JVMs: after the steps every rank's parameters are
 * bit-identical, and they equal (2 ranks: bit for bit) a single-process run over the same global
 * batches ({@link GradientAccumulationReference}, which does not use rdma4j).
 */
class DataParallelTest {
    private static final int STEPS = 6;
    private static final int ROWS = 8;
    private static final Duration TIMEOUT = Duration.ofSeconds(180);

    @TempDir
    Path out;

    private static Map<String, String> env(String transport) {
        // one BLAS/OpenMP thread: the reference runs in this JVM with the same (deterministic) kernels
        return Map.of("RDMA4J_TRANSPORT", transport, "OMP_NUM_THREADS", "1",
                "JDK_JAVA_OPTIONS", "--sun-misc-unsafe-memory-access=allow");
    }

    private byte[][] train(int ranks, String transport, String kind, DataType type, String updater, boolean zeroCopy)
            throws Exception {
        try (RankProcesses p = RankProcesses.launch(ranks, TrainRank.class, env(transport), kind, type.name(), updater,
                Integer.toString(STEPS), Integer.toString(ROWS), out.toString(), Boolean.toString(zeroCopy))) {
            p.awaitSuccess(TIMEOUT);
            byte[][] bits = new byte[ranks][];
            for (int r = 0; r < ranks; r++) {
                assertTrue(p.output(r).contains("steps " + STEPS + " zeroCopy " + zeroCopy), p.output(r));
                bits[r] = Files.readAllBytes(out.resolve("rank" + r + ".bin"));
            }
            return bits;
        }
    }

    private static void assertBitIdenticalAcrossRanks(byte[][] bits) {
        for (int r = 1; r < bits.length; r++) {
            assertArrayEquals(bits[0], bits[r], "rank " + r + "'s parameters differ from rank 0's");
        }
    }

    @Test
    void multiLayerNetworkWithAdamInF32OnTwoRanksEqualsTheSingleProcessRunBitForBit() throws Exception {
        byte[][] bits = train(2, "shm", "mlp", DataType.FLOAT, "adam", true);
        assertBitIdenticalAcrossRanks(bits);
        byte[] reference = GradientAccumulationReference.train("mlp", DataType.FLOAT, "adam", STEPS, 2, ROWS);
        assertArrayEquals(reference, bits[0]);
        byte[] untrained = TinyNetworks.parameterBits(TinyNetworks.build("mlp", DataType.FLOAT, "adam", 1000));
        assertFalse(java.util.Arrays.equals(untrained, bits[0]), "training changed nothing");
    }

    @Test
    void computationGraphWithSgdInF64OverTcpStagedEqualsTheSingleProcessRunBitForBit() throws Exception {
        byte[][] bits = train(2, "tcp", "graph", DataType.DOUBLE, "sgd", false);
        assertBitIdenticalAcrossRanks(bits);
        assertArrayEquals(GradientAccumulationReference.train("graph", DataType.DOUBLE, "sgd", STEPS, 2, ROWS), bits[0]);
    }

    /**
     * Four ranks add their gradients in the order the allreduce algorithm chooses, which need not
     * be the reference's rank order: equal across ranks bit for bit, to the reference within
     * float rounding (1e-5 relative).
     */
    @Test
    void fourRanksStayBitIdenticalAndMatchTheSingleProcessRunWithinRounding() throws Exception {
        byte[][] bits = train(4, "shm", "mlp", DataType.FLOAT, "sgd", true);
        assertBitIdenticalAcrossRanks(bits);
        float[] got = floats(bits[0]);
        float[] want = floats(GradientAccumulationReference.train("mlp", DataType.FLOAT, "sgd", STEPS, 4, ROWS));
        assertEquals(want.length, got.length);
        for (int i = 0; i < want.length; i++) {
            assertEquals(want[i], got[i], 1e-5 * Math.max(1, Math.abs(want[i])), "parameter " + i);
        }
    }

    /**
     * Rank 0 resumes from a checkpoint (iteration 1000, epoch 100) while rank 1 starts fresh:
     * Adam's bias correction reads the iteration count (schedules read the epoch count), so both
     * must step with rank 0's, and end the one epoch fitted at 101.
     */
    @Test
    void aNetworkResumedOnRankZeroGivesEveryRankItsIterationCount() throws Exception {
        try (RankProcesses p = RankProcesses.launch(2, TrainRank.class, env("shm"), "mlp", "FLOAT", "adam",
                Integer.toString(STEPS), Integer.toString(ROWS), out.toString(), "true", "-1", "1000")) {
            p.awaitSuccess(TIMEOUT);
            for (int r = 0; r < 2; r++) {
                assertTrue(p.output(r).contains("iterations " + (1000 + STEPS) + " epochs " + (100 + 1)), p.output(r));
            }
        }
        assertBitIdenticalAcrossRanks(new byte[][] {Files.readAllBytes(out.resolve("rank0.bin")),
                Files.readAllBytes(out.resolve("rank1.bin"))});
    }

    @Test
    void aRankWithFewerBatchesFailsEveryRankSayingSo() throws Exception {
        try (RankProcesses p = RankProcesses.launch(2, TrainRank.class, env("shm"), "mlp", "FLOAT", "sgd",
                Integer.toString(STEPS), Integer.toString(ROWS), out.toString(), "true", "1")) {
            for (int r = 0; r < 2; r++) {
                assertTrue(p.process(r).waitFor(TimeLimits.scaled(TIMEOUT).toSeconds(), java.util.concurrent.TimeUnit.SECONDS), "rank " + r + " hangs");
                assertEquals(3, p.process(r).exitValue(), p.output(r));
                assertTrue(p.output(r).contains("UNEVEN: data-parallel step " + (STEPS - 1)
                        + ": rank(s) 1 ran out of batches while others still have some"), p.output(r));
            }
        }
    }

    private static float[] floats(byte[] bits) {
        float[] f = new float[bits.length / Float.BYTES];
        ByteBuffer.wrap(bits).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(f);
        return f;
    }
}
