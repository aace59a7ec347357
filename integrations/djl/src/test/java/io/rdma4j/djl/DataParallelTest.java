package io.rdma4j.djl;

import io.rdma4j.transport.testing.RankProcesses;
import io.rdma4j.transport.testing.TimeLimits;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Data-parallel DJL (PyTorch engine) training across separate JVMs: after the steps every rank's
 * parameters are bit-identical, and they equal (2 ranks: bit for bit) a single-process run over
 * the same global batches ({@link GradientAccumulationReference}, which does not use rdma4j).
 */
class DataParallelTest {
    private static final int STEPS = 6;
    private static final int ROWS = 8;
    private static final Duration TIMEOUT = Duration.ofSeconds(180);

    @TempDir
    Path out;

    static Map<String, String> env(String transport) {
        return Map.of("RDMA4J_TRANSPORT", transport, "OMP_NUM_THREADS", "1", "DJL_OFFLINE", "true");
    }

    private byte[][] train(int ranks, String transport, String optimizer) throws Exception {
        try (RankProcesses p = RankProcesses.launch(ranks, TrainDjlRank.class, env(transport), optimizer,
                Integer.toString(STEPS), Integer.toString(ROWS), out.toString())) {
            p.awaitSuccess(TIMEOUT);
            byte[][] bits = new byte[ranks][];
            for (int r = 0; r < ranks; r++) {
                assertTrue(p.output(r).contains("steps " + STEPS + "\nprovider " + transport), p.output(r));
                bits[r] = Files.readAllBytes(out.resolve("rank" + r + ".bin"));
            }
            for (int r = 1; r < ranks; r++) {
                assertArrayEquals(bits[0], bits[r], "rank " + r + "'s parameters differ from rank 0's");
            }
            return bits;
        }
    }

    @Test
    void adamOnTwoRanksOverSharedMemoryEqualsTheSingleProcessRunBitForBit() throws Exception {
        byte[][] bits = train(2, "shm", "adam");
        assertArrayEquals(GradientAccumulationReference.train("adam", STEPS, 2, ROWS), bits[0]);
        assertFalse(Arrays.equals(GradientAccumulationReference.train("adam", 0, 2, ROWS), bits[0]), "training changed nothing");
    }

    @Test
    void sgdOnTwoRanksOverTcpEqualsTheSingleProcessRunBitForBit() throws Exception {
        byte[][] bits = train(2, "tcp", "sgd");
        assertArrayEquals(GradientAccumulationReference.train("sgd", STEPS, 2, ROWS), bits[0]);
    }

    /** Four gradients are added in the allreduce algorithm's order: equal across ranks, to the reference within rounding. */
    @Test
    void fourRanksStayBitIdenticalAndMatchTheSingleProcessRunWithinRounding() throws Exception {
        float[] got = floats(train(4, "shm", "sgd")[0]);
        float[] want = floats(GradientAccumulationReference.train("sgd", STEPS, 4, ROWS));
        assertEquals(want.length, got.length);
        for (int i = 0; i < want.length; i++) {
            assertEquals(want[i], got[i], 1e-5 * Math.max(1, Math.abs(want[i])), "parameter " + i);
        }
    }

    /**
     * BatchNorm's running mean and variance have no gradient: each rank's forward passes update
     * them from its own shard, and only their broadcast keeps the ranks' models alike.
     */
    @Test
    void parametersWithoutGradientsSuchAsBatchNormStatisticsAreTheSameOnEveryRank() throws Exception {
        try (RankProcesses p = RankProcesses.launch(2, TrainDjlRank.class, env("shm"), "sgd",
                Integer.toString(STEPS), Integer.toString(ROWS), out.toString(), "-1", "batchnorm")) {
            p.awaitSuccess(TIMEOUT);
            byte[] rank0 = Files.readAllBytes(out.resolve("rank0.bin"));
            assertArrayEquals(rank0, Files.readAllBytes(out.resolve("rank1.bin")),
                    "the ranks' models (running statistics included) differ");
        }
    }

    @Test
    void aRankWithFewerBatchesFailsEveryRankSayingSo() throws Exception {
        try (RankProcesses p = RankProcesses.launch(2, TrainDjlRank.class, env("shm"), "sgd",
                Integer.toString(STEPS), Integer.toString(ROWS), out.toString(), "1")) {
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
        ByteBuffer.wrap(bits).order(ByteOrder.nativeOrder()).asFloatBuffer().get(f);
        return f;
    }
}
