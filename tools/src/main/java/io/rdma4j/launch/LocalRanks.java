package io.rdma4j.launch;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * The ranks of one node as child processes: starts them, forwards their output line by line
 * (by default with a "[rank N]" prefix), and watches them as one group: when a rank exits
 * non-zero the others are stopped (SIGTERM, then SIGKILL after a grace period) and the outcome
 * names that rank and its exit code. Used by {@link Launcher}; usable by any tool that starts
 * ranks itself (a benchmark driver, a test).
 *
 * <pre>
 * try (LocalRanks ranks = LocalRanks.builder()
 *         .ranks(4)
 *         .command(r -&gt; List.of("java", "-cp", cp, "my.Main"))
 *         .environment(r -&gt; Map.of("RANK", "" + r, "WORLD_SIZE", "4"))
 *         .start()) {
 *     RankOutcome o = ranks.await(Duration.ofMinutes(5));
 * }
 * </pre>
 *
 * Ranks are numbered {@code firstRank + localRank} in labels and outcomes. Thread-safe:
 * {@link #stop(String)} may be called from any thread (a signal handler, another node's failure)
 * while one thread is in {@link #await(Duration)}.
 */
public final class LocalRanks implements AutoCloseable {
    /** How long forwarders may take to drain a stopped rank's pipes before output is given up on. */
    private static final long DRAIN_MS = 5_000;

    /** A wait this long is as good as none (and still fits a nanosecond clock). */
    public static final Duration NO_LIMIT = Duration.ofDays(100 * 365);

    private final int firstRank;
    private final Duration grace;
    private final List<Process> processes = new ArrayList<>();
    private final List<LineForwarder> forwarders = new ArrayList<>();
    /** Local ranks in the order they exited (filled by the JDK's process reaper). */
    private final LinkedBlockingQueue<Integer> exits = new LinkedBlockingQueue<>();
    private final Object stopLock = new Object();
    private String stopReason;
    private boolean stopped;
    /** Counted down when the first {@link #stop} has killed everything; later calls wait for it. */
    private final java.util.concurrent.CountDownLatch stopDone = new java.util.concurrent.CountDownLatch(1);

    private LocalRanks(Builder b) {
        this.firstRank = b.firstRank;
        this.grace = b.grace;
        try {
            for (int local = 0; local < b.ranks; local++) {
                start(b, local);
            }
        } catch (IOException | RuntimeException e) {
            stop("rank " + (firstRank + processes.size()) + " could not be started");
            throw e instanceof IOException io
                    ? new UncheckedIOException("cannot start rank " + (firstRank + processes.size()) + ": " + io.getMessage(), io)
                    : (RuntimeException) e;
        }
    }

    private void start(Builder b, int local) throws IOException {
        int rank = firstRank + local;
        List<String> cmd = List.copyOf(b.command.apply(local));
        if (cmd.isEmpty()) {
            throw new IllegalArgumentException("empty command for rank " + rank);
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        if (b.directory != null) {
            pb.directory(b.directory.toFile());
        }
        Map<String, String> env = pb.environment();
        b.environment.apply(local).forEach((k, v) -> {
            if (v == null) {
                env.remove(k);
            } else {
                env.put(k, v);
            }
        });
        Process p = pb.start();
        processes.add(p);
        forwarders.add(new LineForwarder(p.getInputStream(), rank, false, b.output));
        forwarders.add(new LineForwarder(p.getErrorStream(), rank, true, b.output));
        // a waiter thread per rank, not onExit(): that completes on the common ForkJoinPool, which
        // a caller may be blocking (with 2 CPUs it has one worker), so exits would never arrive
        Thread.ofPlatform().daemon().name("rank-" + rank + "-exit").start(() -> {
            while (true) {
                try {
                    p.waitFor();
                    exits.add(local);
                    return;
                } catch (InterruptedException e) {
                    // nobody interrupts this thread; keep waiting for the exit to report
                }
            }
        });
    }

    public static Builder builder() {
        return new Builder();
    }

    public int size() {
        return processes.size();
    }

    /** The process of local rank {@code localRank}. */
    public Process process(int localRank) {
        return processes.get(localRank);
    }

    /**
     * Waits until every rank has exited, or one fails (then stops the others), or the group is
     * stopped, or {@code timeout} passes (then stops them all). Returns once every rank is gone
     * and its output forwarded (a rank whose descendants keep its pipes open is given
     * {@value #DRAIN_MS} ms).
     */
    public RankOutcome await(Duration timeout) throws InterruptedException {
        // saturate: "no limit" callers pass huge durations
        long deadline = System.nanoTime() + (timeout.compareTo(NO_LIMIT) >= 0 ? NO_LIMIT.toNanos() : timeout.toNanos());
        RankOutcome.Kind kind = RankOutcome.Kind.SUCCEEDED;
        int blamed = -1;
        int blamedCode = 0;
        String detail = "all " + processes.size() + " ranks exited 0";
        int exited = 0;
        while (exited < processes.size()) {
            Integer local = exits.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (local == null) {
                kind = RankOutcome.Kind.TIMED_OUT;
                detail = "ranks still running after " + timeout.toMillis() + " ms: " + running();
                stop(detail);
                break;
            }
            exited++;
            int code = processes.get(local).exitValue();
            if (code != 0 && kind == RankOutcome.Kind.SUCCEEDED) {
                String reason = stopReason();
                if (reason != null) {
                    // killed by our own stop: the stop's cause is what the caller wants to hear about
                    kind = RankOutcome.Kind.STOPPED;
                    detail = reason;
                } else {
                    kind = RankOutcome.Kind.RANK_FAILED;
                    blamed = firstRank + local;
                    blamedCode = code;
                    detail = "rank " + blamed + " exited with code " + code + describeSignal(code);
                    stop(detail);
                }
            }
        }
        if (kind == RankOutcome.Kind.SUCCEEDED && stopReason() != null) {
            // stopped from outside, yet every rank managed to exit 0 first
            kind = RankOutcome.Kind.STOPPED;
            detail = stopReason();
        }
        drainOutput();
        Integer[] codes = new Integer[processes.size()];
        for (int i = 0; i < codes.length; i++) {
            codes[i] = processes.get(i).isAlive() ? -1 : processes.get(i).exitValue();
        }
        return new RankOutcome(kind, blamed, blamedCode, detail, Arrays.asList(codes));
    }

    private static String describeSignal(int code) {
        String signal = signalOf(code);
        return signal.isEmpty() ? "" : " (" + signal + ")";
    }

    /**
     * "killed by signal 9 (SIGKILL)" for an exit code that the JVM reports for a child killed by
     * a signal (128 + signal), else the empty string.
     */
    public static String signalOf(int exitCode) {
        if (exitCode <= 128 || exitCode >= 128 + 65) {
            return "";
        }
        int signal = exitCode - 128;
        String name = switch (signal) {
            case 1 -> "SIGHUP";
            case 2 -> "SIGINT";
            case 3 -> "SIGQUIT";
            case 4 -> "SIGILL";
            case 6 -> "SIGABRT";
            case 7 -> "SIGBUS";
            case 8 -> "SIGFPE";
            case 9 -> "SIGKILL";
            case 11 -> "SIGSEGV";
            case 13 -> "SIGPIPE";
            case 15 -> "SIGTERM";
            default -> null;
        };
        return "killed by signal " + signal + (name == null ? "" : " (" + name + ")");
    }

    private String running() {
        List<Integer> alive = new ArrayList<>();
        for (int i = 0; i < processes.size(); i++) {
            if (processes.get(i).isAlive()) {
                alive.add(firstRank + i);
            }
        }
        return alive.toString();
    }

    private String stopReason() {
        synchronized (stopLock) {
            return stopReason;
        }
    }

    /**
     * Stops every rank that is still running: SIGTERM to it and its descendants, SIGKILL to
     * those still alive after the grace period. Blocks until they are gone, a call that finds a
     * stop under way too (a Ctrl-C while a failed rank's peers are being stopped: the shutdown
     * hook must not return, and the JVM halt, before the SIGKILL step). The first call's
     * {@code reason} is what {@link #await} reports for the ranks it killed. Idempotent.
     */
    public void stop(String reason) {
        boolean first;
        synchronized (stopLock) {
            first = !stopped;
            if (first) {
                stopped = true;
                stopReason = Objects.requireNonNull(reason);
            }
        }
        if (!first) {
            awaitStopDone();
            return;
        }
        try {
            killAll();
        } finally {
            stopDone.countDown();
        }
    }

    private void awaitStopDone() {
        try {
            // the first stop's grace period, its SIGKILL wait and some slack
            stopDone.await(grace.toMillis() + 15_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void killAll() {
        List<ProcessHandle> victims = new ArrayList<>();
        for (Process p : processes) {
            if (p.isAlive()) {
                // descendants first: a rank started through a shell script must not leave its JVM behind
                p.descendants().forEach(victims::add);
                victims.add(p.toHandle());
            }
        }
        victims.forEach(ProcessHandle::destroy);
        awaitGone(victims, grace);
        for (ProcessHandle h : victims) {
            if (h.isAlive()) {
                h.destroyForcibly();
            }
        }
        // SIGKILL cannot be refused: this only waits for the kernel to finish the job
        awaitGone(victims, Duration.ofSeconds(10));
    }

    /** Polls rather than onExit(), which would depend on the common ForkJoinPool (see start). */
    private static void awaitGone(List<ProcessHandle> handles, Duration limit) {
        long deadline = System.nanoTime() + limit.toNanos();
        for (ProcessHandle h : handles) {
            while (h.isAlive() && deadline - System.nanoTime() > 0) {
                try {
                    Thread.sleep(10);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private void drainOutput() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(DRAIN_MS);
        for (LineForwarder f : forwarders) {
            f.join(TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
        }
    }

    /** Stops every rank still running (see {@link #stop(String)}). */
    @Override
    public void close() {
        stop("closed");
    }

    public static final class Builder {
        private int ranks = -1;
        private int firstRank;
        private IntFunction<List<String>> command;
        private IntFunction<Map<String, String>> environment = r -> Map.of();
        private RankOutput output = RankOutput.prefixed(System.out, System.err);
        private Duration grace = Duration.ofSeconds(10);
        private Path directory;

        private Builder() {
        }

        /** How many ranks to start on this node. */
        public Builder ranks(int ranks) {
            this.ranks = ranks;
            return this;
        }

        /** Rank of local rank 0 in labels and outcomes (node rank x ranks per node). */
        public Builder firstRank(int firstRank) {
            this.firstRank = firstRank;
            return this;
        }

        /** The command line of each local rank. */
        public Builder command(IntFunction<List<String>> command) {
            this.command = command;
            return this;
        }

        /** The same command line for every rank (they tell themselves apart by environment). */
        public Builder command(List<String> command) {
            List<String> c = List.copyOf(command);
            return command(r -> c);
        }

        /**
         * Variables added to (a null value: removed from) this process's environment for each
         * local rank.
         */
        public Builder environment(IntFunction<Map<String, String>> environment) {
            this.environment = environment;
            return this;
        }

        public Builder output(RankOutput output) {
            this.output = output;
            return this;
        }

        /** How long stopped ranks get between SIGTERM and SIGKILL (default 10 s). */
        public Builder gracePeriod(Duration grace) {
            this.grace = grace;
            return this;
        }

        public Builder directory(Path directory) {
            this.directory = directory;
            return this;
        }

        /**
         * Starts every rank. If one cannot be started, those already started are stopped and
         * an {@link UncheckedIOException} names the rank.
         */
        public LocalRanks start() {
            if (ranks < 1) {
                throw new IllegalArgumentException("ranks must be >= 1, was " + ranks);
            }
            if (firstRank < 0) {
                throw new IllegalArgumentException("first rank must be >= 0, was " + firstRank);
            }
            if (command == null) {
                throw new IllegalArgumentException("no command for the ranks");
            }
            if (grace == null || grace.isNegative()) {
                throw new IllegalArgumentException("grace period must be >= 0, was " + grace);
            }
            Objects.requireNonNull(output, "output");
            return new LocalRanks(this);
        }
    }
}
