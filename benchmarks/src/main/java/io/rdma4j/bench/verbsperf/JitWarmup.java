package io.rdma4j.bench.verbsperf;

import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Runs unmeasured rounds of a test until the JIT compiler has gone quiet. A compiler thread
 * that is still optimising the test loop competes for the CPUs with the loop and with the
 * kernel's work for the device (Soft-RoCE runs in the kernel, on the same CPUs); on a small VM
 * that would be measured as the benchmark's cost. perftest, a C program, needs no warm-up.
 *
 * <p>A round counts as quiet when the JVM's total compilation time did not grow during it and
 * the JVM's other threads (compiler threads in the middle of a long compilation, GC) used
 * almost no CPU meanwhile. In a ping-pong both sides must run the same number of rounds, so with a peer the sides
 * exchange whether they were busy after every round and stop together.
 */
public final class JitWarmup {
    public interface Round {
        void run() throws IOException;
    }

    /** The other side of a ping-pong: tells it whether this side was busy, returns whether either was. */
    public interface Peer {
        boolean eitherBusy(boolean busy) throws IOException;
    }

    private static final CompilationMXBean JIT = ManagementFactory.getCompilationMXBean();
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    /** Other threads may use this share of a round's wall time and still count as quiet. */
    private static final double QUIET_SHARE = 0.05;
    private static final long QUIET_FLOOR_NANOS = 10_000_000;
    private static final long SETTLE_STEP_MILLIS = 200;

    private JitWarmup() {
    }

    /**
     * Runs {@code round} at least twice and until one round passed without compilation on
     * either side, at most {@code maxRounds} times; returns the number of rounds run.
     *
     * @param peer the other side of a ping-pong, or null when only this side runs the rounds
     */
    static int untilQuiet(Round round, OobChannel peer, int maxRounds) throws IOException {
        return untilQuietTogether(round, peer == null ? null
                : busy -> {
                    peer.sendValues(busy ? 1 : 0);
                    return busy | peer.receiveValues("the peer's warm-up status")[0] != 0;
                }, maxRounds);
    }

    /** As {@link #untilQuiet(Round, OobChannel, int)}, with any way of agreeing with the peer. */
    public static int untilQuietTogether(Round round, Peer peer, int maxRounds) throws IOException {
        return untilQuietTogether(round, peer, 0, maxRounds);
    }

    /**
     * As {@link #untilQuietTogether(Round, Peer, int)}, but runs at least {@code minRounds}
     * rounds. The JIT compiles a method when its calls cross a threshold, so a method called a
     * few times per round (a scalar allreduce between larger calls) is compiled many rounds in,
     * long after the first quiet round: a 4-rank {@code allreduce-perf --interleave 200} that
     * timed from its 23rd round on recorded compilations in rounds 9-176 of the timed ones, each
     * a stall of 5-40 ms on 2 cores; after 600 untimed rounds none.
     */
    public static int untilQuietTogether(Round round, Peer peer, int minRounds, int maxRounds) throws IOException {
        int rounds = 0;
        boolean busy = true;
        while ((busy || rounds < minRounds) && rounds < maxRounds) {
            long compiled = compilationMillis();
            long othersCpu = otherThreadsCpuNanos();
            long start = System.nanoTime();
            round.run();
            rounds++;
            long wall = System.nanoTime() - start;
            long othersUsed = otherThreadsCpuNanos() - othersCpu;
            busy = rounds < 2 || compilationMillis() != compiled
                    || othersUsed > Math.max(QUIET_FLOOR_NANOS, (long) (wall * QUIET_SHARE));
            if (peer != null) {
                busy = peer.eitherBusy(busy);
            }
        }
        return rounds;
    }

    /**
     * For a side that measures nothing itself (the write_bw server): waits, sleeping, until the
     * JVM's other threads have been idle for a {@value #SETTLE_STEP_MILLIS} ms step, so that a
     * compilation left over from start-up does not take CPU from the device while the client
     * measures; at most {@code maxMillis}. Returns whether it settled.
     */
    static boolean settle(long maxMillis) throws IOException {
        long deadline = System.nanoTime() + maxMillis * 1_000_000;
        while (System.nanoTime() < deadline) {
            long compiled = compilationMillis();
            long othersCpu = otherThreadsCpuNanos();
            try {
                Thread.sleep(SETTLE_STEP_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while waiting for the JVM to settle", e);
            }
            long used = otherThreadsCpuNanos() - othersCpu;
            if (compilationMillis() == compiled && used < SETTLE_STEP_MILLIS * 1_000_000 * QUIET_SHARE) {
                return true;
            }
        }
        return false;
    }

    /** CPU time of the whole process minus this thread's; 0 when the JVM cannot tell. */
    private static long otherThreadsCpuNanos() {
        if (!(ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os)
                || !THREADS.isCurrentThreadCpuTimeSupported()) {
            return 0;
        }
        return os.getProcessCpuTime() - THREADS.getCurrentThreadCpuTime();
    }

    /** Total time the JIT has spent compiling; -1 (never changes) when the JVM does not report it. */
    static long compilationMillis() {
        return JIT != null && JIT.isCompilationTimeMonitoringSupported() ? JIT.getTotalCompilationTime() : -1;
    }
}
