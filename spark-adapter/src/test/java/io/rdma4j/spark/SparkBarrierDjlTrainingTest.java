package io.rdma4j.spark;

import io.rdma4j.djl.TrainDjlRank;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * DJL data-parallel training from a Spark barrier stage in local[2]: each barrier task runs one
 * rank as a JVM of its own ({@link BarrierRankProcess}), which trains with EasyTrain.fit and
 * {@code io.rdma4j.djl.DataParallel}; the ranks end with bit-identical parameters.
 */
@Timeout(300)
class SparkBarrierDjlTrainingTest {
    private static final int TASKS = 2;

    @TempDir
    Path out;

    /** Runs in each barrier task: this task's rank as a process; returns "rank/size". */
    static String trainInTask(String outDir, String... extraArgs) {
        SparkBarrierGroup group = SparkBarrierGroup.current();
        List<String> command = BarrierRankProcess.javaCommand(Path.of(System.getProperty("java.home")),
                List.of("--enable-native-access=ALL-UNNAMED", "-Dai.djl.offline=true", "-XX:+UseSerialGC", "-Xmx256m"),
                Arrays.asList(System.getProperty("java.class.path").split(File.pathSeparator)),
                TrainDjlRank.class.getName(), concat(List.of("adam", "4", "8", outDir), extraArgs));
        BarrierRankProcess.run(group, command, Map.of("RDMA4J_TRANSPORT", "tcp", "RDMA4J_TCP_ADDRESS", "127.0.0.1",
                        "OMP_NUM_THREADS", "1", "DJL_OFFLINE", "true"),
                Path.of(outDir, "task" + group.rank() + ".log"), Duration.ofMinutes(3));
        return group.rank() + "/" + group.size();
    }

    private static List<String> concat(List<String> a, String... b) {
        List<String> all = new java.util.ArrayList<>(a);
        all.addAll(List.of(b));
        return all;
    }

    private static String[] trainInBarrierStage(String outDir, String... extraArgs) {
        return LocalBarrierStage.run(TASKS, () -> trainInTask(outDir, extraArgs));
    }

    @Test
    void aBarrierStageRunsOneDjlRankPerTaskAndTheRanksEndBitIdentical() throws Exception {
        assertEquals(List.of("0/2", "1/2"), List.of(trainInBarrierStage(out.toString())));
        byte[] rank0 = Files.readAllBytes(out.resolve("rank0.bin"));
        assertTrue(rank0.length > 100, "no parameters written");
        assertArrayEquals(rank0, Files.readAllBytes(out.resolve("rank1.bin")), "rank 1's parameters differ from rank 0's");
        for (int r = 0; r < TASKS; r++) {
            String log = Files.readString(out.resolve("task" + r + ".log"));
            assertTrue(log.contains("steps 4\nprovider tcp"), log);
        }
    }

    /** Rank 1 has a batch less: both ranks exit 3 (uneven data), so both tasks fail and the stage fails saying why. */
    @Test
    void aFailingRankFailsTheStageWithItsExitStatus() throws Exception {
        Exception e = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
                () -> trainInBarrierStage(out.toString(), "1"));
        String all = e.toString() + java.util.Arrays.toString(e.getStackTrace()) + (e.getCause() == null ? "" : e.getCause());
        assertTrue(all.contains("exited with 3"), all);
        for (int r = 0; r < TASKS; r++) {
            assertTrue(Files.readString(out.resolve("task" + r + ".log")).contains("UNEVEN: "), "task " + r);
        }
    }
}
