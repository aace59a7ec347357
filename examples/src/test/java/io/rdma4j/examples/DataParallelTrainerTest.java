package io.rdma4j.examples;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Data-parallel semantics, end to end: ranks in separate JVMs started by the launcher train the
 * MLP for {@value #STEPS} steps; afterwards
 * <ul>
 * <li>every rank's parameters are bit-identical (each rank applies the same averaged gradient:
 *     the allreduce hands every rank the same bits);</li>
 * <li>they match a single-process run over the same global batches within {@value #TOLERANCE}
 *     (absolute, per parameter). Not bit-exact, and not meant to be: the single process sums
 *     the per-sample gradients of the whole global batch in one float accumulation and divides
 *     by its size, while data-parallel ranks each sum their shard, and the allreduce then adds
 *     the shard means in the algorithm's order (ring chunks start at different ranks) and
 *     divides by the rank count; float addition is not associative, so the last bits differ
 *     (about 1e-7 relative per step), and those differences propagate through later steps;</li>
 * <li>the loss decreases.</li>
 * </ul>
 */
@Timeout(180)
class DataParallelTrainerTest {
    static final int STEPS = 25;
    static final float TOLERANCE = 1e-5f;
    static TrainingResult reference;

    @BeforeAll
    static void singleProcessReference() {
        reference = DataParallelTrainer.train(config(), null);
    }

    static DataParallelTrainer.Config config() {
        DataParallelTrainer.Config d = DataParallelTrainer.Config.defaults();
        return new DataParallelTrainer.Config(STEPS, d.globalBatch(), d.features(), d.hidden(), d.classes(),
                d.learningRate(), d.seed());
    }

    @ParameterizedTest(name = "{1} ranks over {0}")
    @CsvSource({"shm, 4", "tcp, 3"})
    void ranksStayIdenticalAndFollowTheSingleProcessRun(String provider, int ranks) throws Exception {
        Path out = Files.createTempDirectory("rdma4j-ddp");
        try {
            Ranks.Launch l = Ranks.launch(Map.of("RDMA4J_TRANSPORT", provider, "RDMA4J_TIMEOUT_MS", "60000"),
                    Ranks.launcherArgs(ranks, DataParallelTrainer.class, "--steps", Integer.toString(STEPS),
                            "--out", out.toString()));
            assertEquals(0, l.status(), l::all);
            TrainingResult first = TrainingResult.read(out.resolve("rank-0.bin"));
            for (int r = 1; r < ranks; r++) {
                TrainingResult other = TrainingResult.read(out.resolve("rank-" + r + ".bin"));
                for (int layer = 0; layer < first.parameters().length; layer++) {
                    assertArrayEquals(bits(first.parameters()[layer]), bits(other.parameters()[layer]),
                            "rank " + r + " layer " + layer + " differs from rank 0");
                }
                assertArrayEquals(bits(first.losses()), bits(other.losses()), "rank " + r + "'s losses");
            }
            float worst = 0;
            for (int layer = 0; layer < first.parameters().length; layer++) {
                float[] dp = first.parameters()[layer];
                float[] sp = reference.parameters()[layer];
                assertEquals(sp.length, dp.length);
                for (int i = 0; i < dp.length; i++) {
                    worst = Math.max(worst, Math.abs(dp[i] - sp[i]));
                }
            }
            System.out.printf("%s x%d: max |data-parallel - single-process| = %.3g, loss %.4f -> %.4f%n", provider,
                    ranks, worst, first.losses()[0], first.losses()[STEPS - 1]);
            assertTrue(worst <= TOLERANCE, "parameters differ from the single-process run by " + worst);
            float[] loss = first.losses();
            for (int s = 0; s < STEPS; s++) {
                assertEquals(reference.losses()[s], loss[s], 1e-4f, "loss of step " + s);
            }
            assertTrue(loss[STEPS - 1] < 0.5f * loss[0], "loss did not halve: " + loss[0] + " -> " + loss[STEPS - 1]);
            // the training actually moved the parameters (a no-op trainer would pass the rest)
            assertTrue(reference.losses()[STEPS - 1] < 0.5f * reference.losses()[0]);
        } finally {
            try (Stream<Path> files = Files.walk(out)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    private static int[] bits(float[] v) {
        int[] b = new int[v.length];
        for (int i = 0; i < v.length; i++) {
            b[i] = Float.floatToRawIntBits(v[i]);
        }
        return b;
    }
}
