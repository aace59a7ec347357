package io.rdma4j.spark;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A barrier stage whose other task failed: Spark kills the surviving task without interrupting
 * its thread (its default), and the rank process that task waits for must stop too, not run on
 * until its own timeout while it holds the executor's memory and devices.
 */
@Timeout(120)
class BarrierRankProcessKillTest {
    @TempDir
    Path dir;

    /**
     * Task 0's rank runs for two minutes and leaves its pid, as the shell itself or (through a
     * launcher: {@code viaLauncher}) as the shell's child; task 1's fails after a second.
     */
    static String runRank(String dir, boolean viaLauncher) {
        SparkBarrierGroup group = SparkBarrierGroup.current();
        String rank0 = viaLauncher ? "sleep 120 & echo $! > " + dir + "/pid0; wait" : "echo $$ > " + dir + "/pid0; exec sleep 120";
        String script = group.rank() == 0 ? rank0 : "sleep 1; exit 1";
        BarrierRankProcess.run(group, List.of("sh", "-c", script), Map.of(), Path.of(dir, "task" + group.rank() + ".log"),
                Duration.ofMinutes(3));
        return "done";
    }

    @Test
    void whenAnotherTaskFailsTheSurvivingTasksRankProcessIsStopped() throws Exception {
        assertRankZeroStopped(false);
    }

    /** The rank process a launcher started (a grandchild of the task) is stopped as well. */
    @Test
    void aRankStartedThroughALauncherIsStoppedToo() throws Exception {
        assertRankZeroStopped(true);
    }

    private void assertRankZeroStopped(boolean viaLauncher) throws Exception {
        String d = dir.toString();
        Exception e = assertThrows(Exception.class, () -> LocalBarrierStage.run(2, () -> runRank(d, viaLauncher)));
        String all = e + String.valueOf(e.getCause());
        assertTrue(all.contains("exited with 1"), all);
        long pid = Long.parseLong(Files.readString(dir.resolve("pid0")).trim());
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false) && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false),
                "rank 0's process (pid " + pid + ") still runs after its stage failed");
    }
}
