package io.rdma4j.spark;

import io.rdma4j.transport.bootstrap.TcpStore;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * Runs one rank of a training job as its own JVM from a barrier task, the way Spark's
 * TorchDistributor runs torchrun: task r of N starts {@code command} with RANK=r, WORLD_SIZE=N,
 * MASTER_ADDR/MASTER_PORT (task 0's host and a free port there, where rank 0 serves the job's
 * store) and a fresh RDMA4J_JOB_TOKEN, all agreed through the barrier's all-gather, and waits
 * for it.
 *
 * <p>Why a process of its own: the rank's JVM can be another JDK than the executor's (rdma4j needs
 * 22+, while Spark 4.0/4.1 executors cannot start on JDK 23+: Hadoop's UserGroupInformation calls
 * {@code Subject.getSubject}, which those JDKs refuse), and a framework whose native engine allows
 * one training per process (DJL's PyTorch engine: one gradient collector per JVM) keeps one
 * training per process even when an executor runs several tasks.
 *
 * <p>A rank that fails fails its task, so Spark fails the whole barrier stage and interrupts the
 * other tasks, whose waits then stop their processes: no rank is left running.
 */
public final class BarrierRankProcess {
    /** How often a waiting task looks at its kill flag. */
    private static final long KILL_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private BarrierRankProcess() {
    }

    /** {@code java} (from {@code javaHome}) with {@code jvmOptions}, class path {@code classPath} and the main class and arguments. */
    public static List<String> javaCommand(Path javaHome, List<String> jvmOptions, List<String> classPath, String mainClass,
                                           List<String> args) {
        List<String> command = new java.util.ArrayList<>();
        command.add(javaHome.resolve("bin").resolve("java").toString());
        command.addAll(jvmOptions);
        command.add("-cp");
        command.add(String.join(File.pathSeparator, classPath));
        command.add(mainClass);
        command.addAll(args);
        return command;
    }

    /**
     * Starts this task's rank with {@code command} (plus {@code env} and the job's variables), its
     * output appended to {@code log}, and waits for it up to {@code timeout}; returns when it exited
     * 0, throws otherwise (naming the rank, its exit status and the log). A kill of the task
     * ({@link BarrierGroup#stopRequested}: Spark's, when another task of the stage failed or the job
     * was cancelled, which does not interrupt the thread unless configured to), an interrupt of the
     * waiting thread, or the timeout stops the process; the thread's interrupt status stays set.
     */
    public static void run(BarrierGroup group, List<String> command, Map<String, String> env, Path log, Duration timeout) {
        Objects.requireNonNull(command, "command");
        String[] job = group.allGather(group.rank() == 0 ? group.host() + " " + freePort() + " " + newToken() : "")[0]
                .split(" ");
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        Map<String, String> e = pb.environment();
        e.putAll(env);
        e.put(TcpStore.ENV_MASTER_ADDR, job[0]);
        e.put(TcpStore.ENV_MASTER_PORT, job[1]);
        e.put(TcpStore.ENV_JOB_TOKEN, job[2]);
        e.put(TcpStore.ENV_RANK, Integer.toString(group.rank()));
        e.put("WORLD_SIZE", Integer.toString(group.size()));
        Process p;
        try {
            p = pb.start();
        } catch (IOException ex) {
            throw new UncheckedIOException("rank " + group.rank() + ": cannot start " + command.getFirst(), ex);
        }
        try {
            long start = System.nanoTime();
            long timeoutNanos = timeout.toNanos();
            while (!p.waitFor(Math.min(KILL_POLL_NANOS, Math.max(0, timeoutNanos - (System.nanoTime() - start))),
                    TimeUnit.NANOSECONDS)) {
                if (group.stopRequested()) {
                    throw new IllegalStateException("rank " + group.rank() + ": the task was killed (the stage failed or "
                            + "was cancelled); its process was stopped");
                }
                if (System.nanoTime() - start >= timeoutNanos) {
                    throw new IllegalStateException("rank " + group.rank() + " did not finish within " + timeout
                            + "; output in " + log);
                }
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException("rank " + group.rank() + " exited with " + p.exitValue() + "; output in " + log);
            }
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("rank " + group.rank() + ": interrupted (the stage failed or was cancelled); "
                    + "its process was stopped", ex);
        } finally {
            // its descendants first (a rank started through a shell or launcher is a grandchild,
            // and once the direct child is gone its children are no longer found under it)
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
    }

    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free port for the job's store", e);
        }
    }

    private static String newToken() {
        byte[] b = new byte[16];
        new SecureRandom().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }
}
