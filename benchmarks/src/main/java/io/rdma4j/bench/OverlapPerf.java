package io.rdma4j.bench;

import io.rdma4j.bench.launch.ExitStatus;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.GradientBucketer;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.transport.bootstrap.Store;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * {@code bin/rdma4j overlap-perf}: how well {@link GradientBucketer} hides the gradient allreduce
 * behind a backward pass. A synthetic backward produces {@code --layers} gradients one after the
 * other, each after {@code --layer-us} of work, and marks each ready as it is produced; the
 * buckets' allreduces run on the communicator's progress thread meanwhile. Reported: the
 * backward alone, the allreduce of all buckets alone, both together, and the overlap efficiency
 * (backward alone + allreduce alone) / both: 2.0 is perfect overlap of two equal parts, 1.0 none.
 *
 * <p>No schedule reaches 2.0: the last bucket's gradients are ready only when the backward ends,
 * so its allreduce always runs after it. Hence two more columns: the time {@code finish} still
 * waited after the backward's last layer (with perfect overlap, the last bucket's allreduce), and
 * the efficiency's bound (backward alone + allreduce alone) / (backward alone + allreduce alone /
 * buckets), the value of perfect overlap when each bucket's allreduce takes its share of the
 * allreduce alone.
 *
 * <p>Three kinds of backward: {@code wait} parks for each layer's time without using the CPU (a
 * GPU computing while the CPU drives communication, the usual case in training), {@code cpu}
 * computes on the CPU for it. {@code event} is a GPU's backward as a trainer enqueues it: the
 * trainer marks every gradient at once with {@link GradientBucketer#markReadyWhen}, each with the
 * point in time its layer ends (standing for its CUDA event), and waits in {@code finish}; the
 * progress thread starts each bucket when its time has come. So the trainer does not wake per
 * layer, where {@code wait}'s wakes from a timer at every layer, on the core its rank's allreduce
 * runs on. The allreduce alone, the backward alone and both take turns in every iteration (in
 * alternating order, see {@link #medians}), so that all three are measured under the same
 * conditions of the host (on a shared host the memory bandwidth an allreduce gets can move by a
 * third from one second to the next); each time is the slowest rank's, the median over the
 * iterations. By default a {@code wait} or {@code event} layer's time is calibrated so that the
 * backward alone lasts as long as the allreduce alone, two parts of equal length: a park (each
 * layer's, or the event backward's one) wakes late by the timer's slack, so the measurement is
 * repeated with the layer corrected by the measured difference until the two are within {@link
 * #BALANCED} of each other (at most {@link #BALANCE_ATTEMPTS} times; the last is reported). A
 * {@code cpu} layer ends on time unless its rank loses its core, which no correction fixes; it
 * keeps the allreduce's share. The gradients are views of the buckets by default ({@code
 * --gradients copies}: the trainer's own segments, copied in and out by the CPU, which then
 * competes with the allreduce for it).
 */
public final class OverlapPerf extends CommunicatorTool {
    private static final Duration AWAIT = Duration.ofMinutes(2);
    /** How close a calibrated backward alone must come to the allreduce alone (a fraction of it). */
    private static final double BALANCED = 0.05;
    /** Measurements of a calibrated kind at most, each with the layer time corrected by the last one's difference. */
    private static final int BALANCE_ATTEMPTS = 5;

    private int layers = 16;
    private long layerBytes = 1 << 20;
    private long bucketBytes = 1 << 20;
    private double layerMicros;
    private List<String> backwards = List.of("wait", "cpu");
    private int iters = 20;
    private int warmup = 5;
    /** Whether the gradients live in the buckets ({@link GradientBucketer#withBucketViews}) or are copied in and out. */
    private boolean views = true;
    /** The {@code event} backward's layers' ends, reused every iteration. */
    private TimeReached[] layerEnds;
    /** Sink of the CPU backward's arithmetic, so that the JIT cannot drop it. */
    private static volatile double sink;

    OverlapPerf() {
        super("overlap-perf", 2, "[--layers L] [--layer-bytes SIZE] [--bucket-bytes SIZE] [--layer-us US] "
                + "[--backward wait|event|cpu|both|all] [-n ITERS] [-w WARMUP] [--gradients views|copies]");
    }

    public static void main(String[] args) {
        ExitStatus.exit(() -> new OverlapPerf().run(args, System.getenv(), System.out, System.err));
    }

    @Override
    void option(String name, String v) {
        switch (name) {
            case "--layers" -> layers = positive(name, v);
            case "--layer-bytes" -> layerBytes = ByteSizes.parse(v);
            case "--bucket-bytes" -> bucketBytes = ByteSizes.parse(v);
            case "--layer-us" -> layerMicros = Double.parseDouble(v);
            case "--backward" -> backwards = switch (v) {
                case "wait", "event", "cpu" -> List.of(v);
                case "both" -> List.of("wait", "cpu");
                case "all" -> List.of("wait", "event", "cpu");
                default -> throw new IllegalArgumentException("--backward needs wait, event, cpu, both (wait and cpu) "
                        + "or all, got '" + v + "'");
            };
            case "-n" -> iters = positive(name, v);
            case "-w" -> warmup = positive(name, v);
            case "--gradients" -> views = switch (v) {
                case "views" -> true;
                case "copies" -> false;
                default -> throw new IllegalArgumentException("--gradients needs views or copies, got '" + v + "'");
            };
            default -> throw new IllegalArgumentException("unknown option '" + name + "'");
        }
    }

    @Override
    void validate() {
        if (layerBytes < 4 || layerBytes % 4 != 0 || bucketBytes < 4 || layerMicros < 0) {
            throw new IllegalArgumentException("need --layer-bytes and --bucket-bytes whole f32 counts and --layer-us >= 0");
        }
        if (!views && backwards.contains("event")) {
            throw new IllegalArgumentException("--backward event needs --gradients views: a copied gradient is copied "
                    + "when marked, so it cannot be marked before it is computed");
        }
    }

    @Override
    int runRank(Communicator comm, Store store, PrintStream out) {
        measure(comm, out);
        return ExitStatus.OK;
    }

    private void measure(Communicator comm, PrintStream out) {
        long[] sizes = new long[layers];
        Arrays.fill(sizes, layerBytes);
        layerEnds = new TimeReached[layers];
        Arrays.setAll(layerEnds, l -> new TimeReached());
        try (Arena arena = Arena.ofShared();
             GradientBucketer bucketer = views
                     ? GradientBucketer.withBucketViews(comm, DataType.F32, sizes, bucketBytes, ReduceOp.AVG)
                     : new GradientBucketer(comm, DataType.F32, gradients(arena, sizes), bucketBytes, ReduceOp.AVG)) {
            double allReduceAlone = medians(comm, () -> backward(bucketer, "none", 0))[0].time();
            double[] layerNanos = {layerMicros > 0 ? layerMicros * 1e3 : allReduceAlone / layers};
            comm.broadcast(layerNanos, 0); // one backward length on every rank
            if (comm.rank() == 0) {
                out.printf(Locale.ROOT, "# overlap-perf: %s, %d ranks, %d layers x %d B f32 (%s), %d buckets of <= %d B, "
                                + "%d iterations (median of the slowest rank)%n",
                        comm.provider(), comm.size(), layers, layerBytes, views ? "bucket views" : "copied",
                        bucketer.bucketCount(), bucketBytes, iters);
                out.printf("# %-9s %13s %18s %20s %10s %24s %19s %6s%n", "backward", "layer (us)", "backward alone (ms)",
                        "allreduce alone (ms)", "both (ms)", "after the backward (ms)", "overlap efficiency", "bound");
            }
            for (String kind : backwards) {
                boolean calibrated = layerMicros <= 0 && !kind.equals("cpu");
                long layer = (long) layerNanos[0];
                Median[] turns = inTurns(comm, bucketer, kind, layer);
                // the medians are the same on every rank (taken over the slowest rank), so is every decision here
                for (int attempt = 1; calibrated && attempt < BALANCE_ATTEMPTS && !balanced(turns); attempt++) {
                    layer = Math.max(1_000, layer + (long) ((turns[0].time() - turns[1].time()) / layers));
                    turns = inTurns(comm, bucketer, kind, layer);
                }
                double allReduce = turns[0].time();
                double alone = turns[1].time();
                Median both = turns[2];
                double bound = (alone + allReduce) / (alone + allReduce / bucketer.bucketCount());
                if (comm.rank() == 0) {
                    out.printf(Locale.ROOT, "  %-9s %13.1f %18.3f %20.3f %10.3f %24.3f %19.2f %6.2f%n", kind, layer / 1e3,
                            alone / 1e6, allReduce / 1e6, both.time() / 1e6, both.waited() / 1e6,
                            (alone + allReduce) / both.time(), bound);
                    out.flush();
                }
            }
        }
    }

    /** The allreduce alone, the backward alone and both, taking turns: their {@link #medians}. */
    private Median[] inTurns(Communicator comm, GradientBucketer bucketer, String kind, long layerNanos) {
        return medians(comm, () -> backward(bucketer, "none", 0), () -> backward(null, kind, layerNanos),
                () -> backward(bucketer, kind, layerNanos));
    }

    /** Whether the backward alone and the allreduce alone of {@link #inTurns} differ by at most {@link #BALANCED}. */
    private static boolean balanced(Median[] turns) {
        return Math.abs(turns[1].time() - turns[0].time()) <= BALANCED * turns[0].time();
    }

    private static List<MemorySegment> gradients(Arena arena, long[] sizes) {
        List<MemorySegment> grads = new ArrayList<>();
        for (long bytes : sizes) {
            grads.add(arena.allocate(bytes, 64));
        }
        return grads;
    }

    /**
     * One backward pass: each layer computes for {@code layerNanos} ({@code kind}), then its
     * gradient is marked ready; with a bucketer, waits for every bucket at the end. Returns the
     * nanoseconds of that wait (0 without a bucketer).
     */
    private long backward(GradientBucketer bucketer, String kind, long layerNanos) {
        if (kind.equals("event")) {
            return enqueuedBackward(bucketer, layerNanos);
        }
        for (int l = 0; l < layers; l++) {
            switch (kind) {
                case "wait" -> park(layerNanos);
                case "cpu" -> compute(layerNanos);
                default -> { } // no backward: the allreduce alone
            }
            if (bucketer != null) {
                bucketer.markReady(l);
            }
        }
        if (bucketer == null) {
            return 0;
        }
        long ended = System.nanoTime();
        bucketer.finish(AWAIT);
        return System.nanoTime() - ended;
    }

    /**
     * The {@code event} backward: layer l ends {@code (l + 1) * layerNanos} after the start, and
     * its gradient is marked with that time at once; then waits in {@code finish} (without a
     * bucketer: until the last layer's end).
     */
    private long enqueuedBackward(GradientBucketer bucketer, long layerNanos) {
        long start = System.nanoTime();
        if (bucketer == null) {
            park(layers * layerNanos);
            return 0;
        }
        for (int l = 0; l < layers; l++) {
            layerEnds[l].at = start + (l + 1) * layerNanos;
            bucketer.markReadyWhen(l, layerEnds[l]);
        }
        long ended = start + layers * layerNanos;
        bucketer.finish(AWAIT);
        return Math.max(0, System.nanoTime() - ended);
    }

    private static void park(long nanos) {
        long deadline = System.nanoTime() + nanos;
        for (long left = nanos; left > 0; left = deadline - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    private static void compute(long nanos) {
        long deadline = System.nanoTime() + nanos;
        double x = 1;
        do {
            for (int i = 0; i < 256; i++) {
                x = x * 1.000_000_1 + 1e-9;
            }
        } while (System.nanoTime() - deadline < 0);
        sink = x;
    }

    /**
     * Medians over the iterations of the slowest rank's time of each body and of the wait it
     * returned (its time in {@code finish}), in ns; the bodies take turns within each iteration,
     * and all ranks start each body together. The turns run forward in even iterations and
     * backward in odd ones, so that each body follows a busy one and an idle one as often:
     * a core that slept through a waiting backward alone starts what comes next with caches
     * others used meanwhile (2 ranks, 4 MiB buckets: the first bucket of an allreduce that
     * followed the backward alone took 700 us, of one that followed the run of both 513 us).
     */
    private Median[] medians(Communicator comm, LongSupplier... bodies) {
        int k = bodies.length;
        double[] times = new double[k * iters];
        double[] waits = new double[k * iters];
        for (int i = -warmup; i < iters; i++) {
            for (int turn = 0; turn < k; turn++) {
                int b = bodyAt(i, turn, k);
                comm.barrier();
                long t0 = System.nanoTime();
                long wait = bodies[b].getAsLong();
                if (i >= 0) {
                    times[b * iters + i] = System.nanoTime() - t0;
                    waits[b * iters + i] = wait;
                }
            }
        }
        comm.allReduce(times, ReduceOp.MAX);
        comm.allReduce(waits, ReduceOp.MAX);
        Median[] medians = new Median[k];
        for (int b = 0; b < k; b++) {
            medians[b] = new Median(Medians.of(times, b * iters, iters), Medians.of(waits, b * iters, iters));
        }
        return medians;
    }

    /**
     * The body that runs at {@code turn} of {@code iteration} in {@link #medians}: forward in
     * even iterations, backward in odd ones.
     */
    static int bodyAt(int iteration, int turn, int bodies) {
        return (iteration & 1) == 0 ? turn : bodies - 1 - turn;
    }

    /** A layer's end in the {@code event} backward: holds once {@link System#nanoTime()} reached {@link #at}. */
    private static final class TimeReached implements BooleanSupplier {
        volatile long at;

        @Override
        public boolean getAsBoolean() {
            return System.nanoTime() - at >= 0;
        }
    }

    /** One body's result in {@link #medians}: of the whole body's time and of its wait in {@code finish}, in ns. */
    private record Median(double time, double waited) {
    }
}
