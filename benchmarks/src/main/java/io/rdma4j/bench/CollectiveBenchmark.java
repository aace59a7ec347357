package io.rdma4j.bench;

import io.rdma4j.bench.check.ElementCodec;
import io.rdma4j.bench.check.TestPattern;
import io.rdma4j.bench.coll.BenchCollective;
import io.rdma4j.bench.coll.Slots;
import io.rdma4j.bench.verbsperf.JitWarmup;
import io.rdma4j.collectives.Algorithm;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.collectives.reduce.Simd;
import io.rdma4j.transport.IdleStrategy;
import io.rdma4j.transport.bootstrap.Store;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The measurement loop shared by every collective, as nccl-tests runs it on each rank: per size
 * and placement, an untimed checked run (with {@code -c 1}; it also warms up), warm-ups, a
 * barrier, then {@code -n} back-to-back calls timed together; the per-iteration time is
 * averaged over the ranks. Each rank counts its wrong elements against the values it derives
 * itself ({@link TestPattern}), and rank 0 sums the counts it reads from the bootstrap store,
 * not through the collectives under test. With {@code --repeats R}
 * the timed block runs R times and the best rank-averaged time counts (robust against a
 * shared machine's scheduling hiccups; nccl-tests' behaviour is R = 1). Rank 0 prints.
 */
public final class CollectiveBenchmark {
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE;
    /** JIT warm-up rounds that also verify and run the larger sizes (see {@link #jitWarmup}). */
    private static final int PROFILED_WARMUP_ROUNDS = 20;
    private static final long JIT_WARMUP_LARGE_MAX_BYTES = 16 << 20;
    /** How long the JIT must have been idle after the warm-up before anything is timed. */
    private static final long JIT_IDLE_MILLIS = 100;
    private static final long JIT_IDLE_MAX_MILLIS = 5_000;
    /** Calls of each until-quiet round (spread over the small sizes, each at least once), and the most rounds. */
    private static final int QUIET_ROUND_CALLS = 256;
    private static final int MAX_QUIET_ROUNDS = 50;
    /** Longer than the default idle strategy's spin and yield phases together ({@link #waitPastYieldsOnce}). */
    private static final long PAST_YIELDS_MILLIS = 2 * IdleStrategy.Backoff.DEDICATED_YIELD_NANOS / 1_000_000;
    /** The interleaved mode's until-quiet rounds end at this many times its timed rounds. */
    private static final int MAX_INTERLEAVE_WARMUP_FACTOR = 10;
    /** Timed back-to-back calls of each size per {@code --interleave} round. */
    private static final int ALONE_CALLS = 4;

    /** How long rank 0 waits for another rank's wrong-element count. */
    private static final Duration COUNT_WAIT = Duration.ofMinutes(5);

    private final Communicator comm;
    private final Store store;
    private final PerfOptions o;
    private final BenchCollective coll;
    private final String tool;
    private final PrintStream out;
    private final PrintStream err;

    private int countsPublished;

    /** @param store the job's bootstrap store, through which the ranks' wrong-element counts reach rank 0 */
    public CollectiveBenchmark(Communicator comm, Store store, PerfOptions options, String tool, PrintStream out,
                               PrintStream err) {
        this.comm = comm;
        this.store = store;
        this.o = options;
        this.coll = options.collective;
        this.tool = tool;
        this.out = out;
        this.err = err;
    }

    /** Runs every size; returns the number of wrong elements: on rank 0 over all ranks, elsewhere this rank's (0 unchecked). */
    public long run() {
        int n = comm.size();
        int rank = comm.rank();
        if (coll.rooted() && o.root >= n) {
            throw new IllegalArgumentException("root " + o.root + " is not a rank of this job of " + n);
        }
        DataType type = o.type;
        int es = type.byteSize();
        List<Long> sizes = o.sizes();
        long maxCount = 0;
        for (long s : sizes) {
            maxCount = Math.max(maxCount, coll.count(s, es, n));
        }
        boolean print = rank == 0;
        ResultTable table = new ResultTable(out);
        Progress progress = new Progress(err, tool, sizes.size());
        String transport = comm.provider();
        try (Arena arena = Arena.ofShared();
             CsvResults csv = print && o.csv != null
                     ? new CsvResults(o.csv, "rdma4j", coll.name(), n, transport) : null) {
            MemorySegment sendBuf = arena.allocate(Math.max(64, coll.sendElements(maxCount, n) * es), 4096);
            MemorySegment recvBuf = arena.allocate(Math.max(64, coll.recvElements(maxCount, n) * es), 4096);
            MemorySegment stats = arena.allocate(16, 8);
            printHeader(print, arena, sizes, transport);
            if (print) {
                table.header();
            }
            TestPattern pattern = new TestPattern(type, coll.reduces() ? o.op : null);
            double[] tableUs = new double[sizes.size()];
            long warmUpWrong = jitWarmup(sizes, sendBuf, recvBuf, stats, pattern);
            long wrong = warmUpWrong;
            for (int i = 0; i < sizes.size(); i++) {
                long bytes = sizes.get(i);
                if (print) {
                    progress.starting(i, bytes);
                }
                long count = coll.count(bytes, es, n);
                Measurement outOfPlace = o.runsOutOfPlace()
                        ? measure(coll.slots(sendBuf, recvBuf, count, es, rank, n, false), count, bytes, pattern, stats,
                        "out-of-place") : null;
                Measurement inPlace = o.runsInPlace()
                        ? measure(coll.slots(sendBuf, recvBuf, count, es, rank, n, true), count, bytes, pattern, stats,
                        "in-place") : null;
                wrong += wrongOf(outOfPlace) + wrongOf(inPlace);
                tableUs[i] = (outOfPlace != null ? outOfPlace : inPlace).timeUs();
                if (print) {
                    ResultRow row = new ResultRow(coll.printedBytes(count, es, n), count, PerfOptions.typeName(type),
                            coll.reduces() ? o.op.name().toLowerCase(Locale.ROOT) : "none", coll.rooted() ? o.root : -1,
                            outOfPlace, inPlace, algorithm(count * es));
                    table.row(row);
                    if (csv != null) {
                        csv.row(row);
                    }
                }
            }
            if (print) {
                table.footer(warmUpWrong);
            }
            if (o.interleaveRounds > 0) {
                interleaved(sizes, sendBuf, recvBuf, tableUs, arena, print);
            }
            return wrong;
        }
    }

    /**
     * The sizes the JIT warm-up runs: the requested ones, and {@link PerfOptions#JIT_WARMUP_MAX_BYTES}
     * in front when none of them is that small. A run of large sizes only otherwise went untimed
     * into the JIT's work: 2 ranks over shm, {@code -b 512K -e 2M -f 4} took 2.9-3.2 ms per 512 KiB
     * call, 49 us when {@code -b 128K} put a warmed-up size in front (buffers are sized for the
     * largest size, so the smaller one fits).
     */
    static List<Long> warmUpSizes(List<Long> sizes) {
        if (sizes.stream().anyMatch(b -> b <= PerfOptions.JIT_WARMUP_MAX_BYTES)) {
            return sizes;
        }
        List<Long> withSmall = new ArrayList<>(sizes.size() + 1);
        withSmall.add(PerfOptions.JIT_WARMUP_MAX_BYTES);
        withSmall.addAll(sizes);
        return withSmall;
    }

    /**
     * A JVM needs its code compiled before it is timed, which nccl-tests' few warm-ups per size
     * do not give the first (small) sizes: run every size up to {@link PerfOptions#JIT_WARMUP_MAX_BYTES}
     * enough rounds first (by default {@link PerfOptions#JIT_WARMUP_CALLS} calls in all) that every
     * algorithm the policy picks there is compiled by C2. A fixed count, not a duration: every rank
     * must make the same calls. The first {@link #PROFILED_WARMUP_ROUNDS} rounds, while the code is
     * still profiled, also
     * <ul>
     *   <li>fill and verify as {@link #measure} does, so that the checking code is compiled here
     *       too (3 such rounds left it to be compiled while the first sizes were timed);</li>
     *   <li>run each larger size up to {@link #JIT_WARMUP_LARGE_MAX_BYTES} once (unchecked): C2
     *       turns the branches a profile never saw into traps, and the first size above the small
     *       ones (several pieces through a shared window, waits long enough to sleep) then
     *       deoptimized {@code Engine.drive} and {@code SharedWindowAllReduce.step} on every rank
     *       and ran 1-16 MiB at a third of their speed until C2 had compiled them again.</li>
     * </ul>
     * and, before the first round, every rank once waits for the others longer than the idle
     * strategy spins and yields ({@link #waitPastYieldsOnce}).
     * Then each rank waits for its JIT to finish ({@link #awaitJitIdle}): a compiler thread that
     * still works while the small sizes are timed takes a core from the ranks (4 ranks on 2 cores:
     * a 64 B allreduce takes 3-4 us, and stretches of 10,000 of them averaged 10-30 us while C2
     * was compiling), then runs rounds until no rank's JIT compiled anything during one
     * ({@link #warmUntilQuiet}). Returns the wrong elements the checked rounds found. The sizes are
     * the requested ones, with a small one in front where none is ({@link #warmUpSizes}).
     */
    private long jitWarmup(List<Long> requested, MemorySegment sendBuf, MemorySegment recvBuf, MemorySegment stats,
                           TestPattern pattern) {
        List<Long> sizes = warmUpSizes(requested);
        int n = comm.size();
        int es = o.type.byteSize();
        int rounds = o.jitWarmupRounds;
        if (rounds == PerfOptions.JIT_WARMUP_AUTO) {
            long smallSizes = sizes.stream().filter(b -> b <= PerfOptions.JIT_WARMUP_MAX_BYTES).count();
            rounds = (int) Math.max(PerfOptions.JIT_WARMUP_CALLS_PER_SIZE,
                    (PerfOptions.JIT_WARMUP_CALLS + smallSizes - 1) / smallSizes);
        }
        long wrong = 0;
        if (rounds > 0) {
            waitPastYieldsOnce();
        }
        for (int round = 0; round < rounds; round++) {
            boolean profiled = round < PROFILED_WARMUP_ROUNDS;
            for (long bytes : sizes) {
                boolean small = bytes <= PerfOptions.JIT_WARMUP_MAX_BYTES;
                if (!small && !(profiled && bytes <= JIT_WARMUP_LARGE_MAX_BYTES)) {
                    continue;
                }
                boolean checked = o.check && profiled && small;
                long count = coll.count(bytes, es, n);
                Slots s = coll.slots(sendBuf, recvBuf, count, es, comm.rank(), n, !o.runsOutOfPlace());
                if (checked) {
                    fill(s, count, pattern);
                }
                runCalls(s, count, 1);
                if (checked) {
                    wrong += verify(s, count, pattern, bytes, "warm-up");
                }
                // what measure() runs between timed blocks, so that the first sizes timed do not
                // pay for its compilation (the barrier's message path reached C2 while 8 KiB was
                // timed when this ran once per round)
                comm.barrier();
            }
            // also a second data type (the f64 stats), so that its recompilation of the reduction
            // kernels' callers happens here
            comm.allReduce(stats, stats, 2, DataType.F64, ReduceOp.SUM);
        }
        if (rounds > 0) {
            awaitJitIdle();
            warmUntilQuiet(sizes, sendBuf, recvBuf, stats);
            comm.barrier();
        }
        return o.check ? wrongOnEveryRank(wrong) : 0;
    }

    /**
     * The trainer's pattern ({@code --interleave R}): R rounds, each calling every size once in an
     * order drawn from a generator seeded with the round (the same on every rank), each call
     * after a 4-byte allreduce (a loss or a metric between gradient buckets), and each call timed
     * alone. Every round then runs each size back to back too ({@link #ALONE_CALLS} timed calls
     * after an untimed one), so that both are measured under the same conditions of the host,
     * taking turns: a shared host's memory bandwidth between two cores can change several-fold
     * from one second to the next, which makes a comparison with the table, timed earlier,
     * meaningless. Rank 0 prints for each size its table time, then, of the calls' times averaged
     * over the ranks, the mean over the rounds back to back and interleaved and their ratio, and
     * the same with the median over the rounds: on a shared host a round in which a vCPU was
     * taken away for a few milliseconds moves the mean of 200 calls of tens of microseconds by
     * half, the median not. Rounds in front of the R are not counted: the JIT recompiles for
     * the new mix of calls there (with 50 rounds counted from the first, a 64 KiB call averaged
     * 47-143 us interleaved; with 400, 24 us). At least R of them, then more until one passed in
     * which no rank's JIT compiled anything ({@link JitWarmup#untilQuietTogether(JitWarmup.Round,
     * JitWarmup.Peer, int, int)}). After a fixed 20, C2 was still deoptimizing and
     * recompiling the copy, reduction and shared-window code for the mix ({@code
     * -XX:+PrintCompilation}: "made not entrant: uncommon trap" among the counted rounds), and a
     * rank waiting on its peer yielded its pinned core to the compiler thread, so that 2 of 3 runs
     * had a mean at 64 KiB 1.5-4.4x the median; after those 20 and one quiet round, 4 ranks on 2
     * cores still compiled the scalar's, the pieces' and this loop's code in the counted rounds
     * (5-40 ms a stall, in the same rounds run after run), which 600 untimed rounds removed. The
     * untimed rounds record their times as the counted ones do, so that this code is compiled too.
     */
    private long warmSum;

    private void interleaved(List<Long> sizes, MemorySegment sendBuf, MemorySegment recvBuf, double[] tableUs,
                             Arena arena, boolean print) {
        int n = comm.size();
        int es = o.type.byteSize();
        int k = sizes.size();
        int[] order = new int[k];
        MemorySegment scalar = arena.allocate(64, 64);
        int rounds = o.interleaveRounds;
        // nanoseconds of size i in round r: interleaved at i * rounds + r, back to back at (k + i) * rounds + r
        MemorySegment nanos = arena.allocate(16L * k * rounds, 8);
        Slots[] slots = new Slots[k];
        long[] counts = new long[k];
        for (int i = 0; i < k; i++) {
            counts[i] = coll.count(sizes.get(i), es, n);
            slots[i] = coll.slots(sendBuf, recvBuf, counts[i], es, comm.rank(), n, !o.runsOutOfPlace());
        }
        comm.barrier();
        MemorySegment flag = arena.allocate(16, 8);
        int[] warmRound = {0};
        int maxWarmRounds = MAX_INTERLEAVE_WARMUP_FACTOR * rounds;
        int warmRounds;
        try {
            warmRounds = JitWarmup.untilQuietTogether(
                    () -> interleaveRound(--warmRound[0], order, slots, counts, scalar, nanos, rounds),
                    busy -> anyRankBusy(flag, busy), rounds, maxWarmRounds);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (warmRounds == maxWarmRounds && print) {
            err.println(tool + ": the JIT was still busy after " + warmRounds
                    + " interleaved warm-up rounds; the interleaved times may include compilation");
        }
        for (int round = 0; round < rounds; round++) {
            interleaveRound(round, order, slots, counts, scalar, nanos, rounds);
        }
        comm.allReduce(nanos, nanos, 2L * k * rounds, DataType.F64, ReduceOp.SUM);
        if (!print) {
            return;
        }
        out.printf("# interleaved: %d rounds, every size once per round in a random order (the same on every rank),%n",
                rounds);
        out.printf("# after %d untimed rounds (at least as many, then until one passed without compilation);%n",
                warmRounds);
        out.println("# each call after a 4-byte allreduce; each round also times every size back to back;");
        out.println("# time per call averaged over the ranks, then its mean and its median over the rounds;");
        out.println("# ratio = interleaved / back to back");
        if (o.interleaveWarmBuffers) {
            out.println("# buffers warm: each interleaved call's send and receive buffers were read just before it");
        }
        out.printf("# %10s  %12s  %18s  %16s  %6s  %18s  %16s  %6s%n", "size (B)", "table (us)", "back to back (us)",
                "interleaved (us)", "ratio", "median b-to-b (us)", "median il. (us)", "ratio");
        for (int i = 0; i < k; i++) {
            double[] il = microsOverRanks(nanos, (long) i * rounds, rounds, n);
            double[] bb = microsOverRanks(nanos, (long) (k + i) * rounds, rounds, n);
            double ilMean = Arrays.stream(il).average().orElseThrow();
            double bbMean = Arrays.stream(bb).average().orElseThrow();
            double ilMedian = Medians.of(il);
            double bbMedian = Medians.of(bb);
            out.printf(Locale.ROOT, "  %10d  %12.2f  %18.2f  %16.2f  %6.2f  %18.2f  %16.2f  %6.2f%n", sizes.get(i),
                    tableUs[i], bbMean, ilMean, ilMean / bbMean, bbMedian, ilMedian, ilMedian / bbMedian);
        }
    }

    /** {@code count} rank-summed nanosecond values from {@code from}: microseconds averaged over {@code n} ranks. */
    private static double[] microsOverRanks(MemorySegment nanos, long from, int count, int n) {
        double[] us = new double[count];
        for (int r = 0; r < count; r++) {
            us[r] = nanos.getAtIndex(F64, from + r) / 1e3 / n;
        }
        return us;
    }

    /**
     * One round of {@link #interleaved}: every size once after a scalar allreduce, in the order
     * drawn for {@code round}, then every size back to back; records the times at round {@code round}
     * modulo {@code rounds} (a method of its own, so that the JIT compiles it whole, not on the stack).
     */
    private void interleaveRound(int round, int[] order, Slots[] slots, long[] counts, MemorySegment scalar,
                                 MemorySegment nanos, int rounds) {
        int k = order.length;
        // SplittableRandom mixes its seed: java.util.Random seeded with 0, 1, 2, ... drew only 6 of
        // the 24 orders of 4 sizes, the third size always last
        SplittableRandom random = new SplittableRandom(round);
        for (int i = 0; i < k; i++) {
            order[i] = i;
        }
        for (int i = k - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int i : order) {
            if (o.interleaveWarmBuffers) {
                warm(slots[i]);
            }
            comm.allReduce(scalar, scalar, 1, DataType.F32, ReduceOp.SUM);
            long t0 = System.nanoTime();
            coll.run(comm, slots[i], counts[i], o.type, o.op, o.root);
            long t = System.nanoTime() - t0;
            // untimed rounds record too (the timed ones overwrite them), so the JIT has compiled this as well
            nanos.setAtIndex(F64, (long) i * rounds + Math.floorMod(round, rounds), t);
        }
        for (int i : order) {
            coll.run(comm, slots[i], counts[i], o.type, o.op, o.root);
            long t0 = System.nanoTime();
            runCalls(slots[i], counts[i], ALONE_CALLS);
            double t = (System.nanoTime() - t0) / (double) ALONE_CALLS;
            nanos.setAtIndex(F64, (long) (k + i) * rounds + Math.floorMod(round, rounds), t);
        }
    }

    /**
     * Whether any rank's JIT was busy: the ranks agree through the communicator (only whether to
     * go on; no result is checked with it), with the call {@link #measure} makes with its stats
     * (2 doubles summed): another type, count or operator here would change the profile that the
     * timed calls then run with.
     */
    private boolean anyRankBusy(MemorySegment flag, boolean busy) {
        flag.set(F64, 0, busy ? 1 : 0);
        flag.set(F64, 8, 0);
        comm.allReduce(flag, flag, 2, DataType.F64, ReduceOp.SUM);
        return flag.get(F64, 0) != 0;
    }

    /** Reads a byte of every 64 of a call's buffers, so that they are in this core's cache. */
    private void warm(Slots s) {
        warmSum += touch(s.send()) + touch(s.recv()); // kept, so that the JIT cannot drop the reads
    }

    private static long touch(MemorySegment m) {
        long sum = 0;
        for (long off = 0; off < m.byteSize(); off += 64) {
            sum += m.get(ValueLayout.JAVA_BYTE, off);
        }
        return sum;
    }

    /**
     * Publishes this rank's wrong-element count of the current check under its own key in the
     * bootstrap store; rank 0 returns the sum of every rank's count, the others their own. The
     * counts do not travel through the collectives they judge.
     */
    private long wrongOnEveryRank(long mine) {
        String key = "bench/" + tool + "/wrong/" + countsPublished++ + "/";
        store.set(key + comm.rank(), Long.toString(mine).getBytes(StandardCharsets.US_ASCII));
        if (comm.rank() != 0) {
            return mine;
        }
        long total = 0;
        for (int r = 0; r < comm.size(); r++) {
            total += Long.parseLong(new String(store.get(key + r, COUNT_WAIT), StandardCharsets.US_ASCII));
        }
        return total;
    }

    /**
     * Rounds of the small sizes until one passed in which no rank's JIT compiled anything (the
     * warm-up of p2p-perf and verbs-perf): a count that compiles everything on a host leaves a
     * JVM in an emulated guest, whose compilers run many times slower, timing interpreted and
     * profiled code. In the Soft-RoCE guest a 2-rank 8 B allreduce measured 7-17 ms per call
     * after {@code --jit-warmup 2}; the same warm-up with C1 only on this host gave 302 us per
     * call over shm, 1.76 us after 2,000 more warm-up calls. The ranks agree after every round
     * (through the communicator: only whether to go on, no result is checked with it).
     */
    private void warmUntilQuiet(List<Long> sizes, MemorySegment sendBuf, MemorySegment recvBuf, MemorySegment flag) {
        List<Long> small = sizes.stream().filter(b -> b <= PerfOptions.JIT_WARMUP_MAX_BYTES).toList();
        int n = comm.size();
        int es = o.type.byteSize();
        int each = Math.max(1, QUIET_ROUND_CALLS / small.size());
        int rounds;
        try {
            rounds = JitWarmup.untilQuietTogether(() -> {
                for (long bytes : small) {
                    long count = coll.count(bytes, es, n);
                    Slots s = coll.slots(sendBuf, recvBuf, count, es, comm.rank(), n, !o.runsOutOfPlace());
                    runCalls(s, count, each);
                }
            }, busy -> anyRankBusy(flag, busy), MAX_QUIET_ROUNDS);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (rounds == MAX_QUIET_ROUNDS && comm.rank() == 0) {
            err.println(tool + ": the JIT was still busy after " + rounds + " quiet-check rounds; the first sizes may "
                    + "include compilation");
        }
    }

    /**
     * Each rank in turn sleeps {@link #PAST_YIELDS_MILLIS} while the others wait for it in a
     * barrier, so that every rank's wait once leaves the idle strategy's yield phase and parks
     * while the code is still profiled. Without it C2 compiled that branch as a trap, and the
     * first wait of that length (which wait it was is not traced) deoptimized {@code
     * Engine.drive} between warm-up and timing: 2 ranks, {@code allreduce-perf
     * -b 8 -e 1K -f 2 -n 100 -w 20 -c 1 -R 3} with {@code -XX:+PrintCompilation}, 3 of 5 runs
     * showed "Engine::drive made not entrant: uncommon trap" (once beside "Backoff::yieldOnce")
     * just before the 8 B row, and then timed sizes with {@code drive} as profiled C1 code or
     * with C2 recompiling it on the compiler thread of a rank pinned to its core; with this wait,
     * 0 of 7.
     */
    private void waitPastYieldsOnce() {
        for (int r = 0; r < comm.size(); r++) {
            if (r == comm.rank()) {
                try {
                    Thread.sleep(PAST_YIELDS_MILLIS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            comm.barrier();
        }
    }

    /**
     * Sleeps until this JVM's JIT has compiled nothing for {@link #JIT_IDLE_MILLIS} (at most
     * {@link #JIT_IDLE_MAX_MILLIS}): sleeping, the ranks leave the cores to the compiler threads.
     */
    private static void awaitJitIdle() {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
            return;
        }
        long deadline = System.nanoTime() + JIT_IDLE_MAX_MILLIS * 1_000_000L;
        long last = jit.getTotalCompilationTime();
        long quietSince = System.nanoTime();
        try {
            while (System.nanoTime() - quietSince < JIT_IDLE_MILLIS * 1_000_000L && System.nanoTime() - deadline < 0) {
                Thread.sleep(JIT_IDLE_MILLIS / 5);
                long total = jit.getTotalCompilationTime();
                if (total != last) {
                    last = total;
                    quietSince = System.nanoTime();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static long wrongOf(Measurement m) {
        return m == null ? 0 : Math.max(0, m.wrong());
    }

    private Measurement measure(Slots s, long count, long bytes, TestPattern pattern, MemorySegment stats,
                                String placement) {
        long wrong = Measurement.NOT_CHECKED;
        if (o.check) {
            fill(s, count, pattern);
            runCalls(s, count, 1);
            wrong = verify(s, count, pattern, bytes, placement);
        } else {
            fillInput(s, count, pattern);
        }
        runCalls(s, count, o.warmupsAt(bytes));
        int iters = o.iterationsAt(bytes);
        double best = Double.MAX_VALUE;
        for (int rep = 0; rep < o.repeats; rep++) {
            comm.barrier();
            long t0 = System.nanoTime();
            runCalls(s, count, iters);
            double seconds = (System.nanoTime() - t0) / 1e9 / iters;
            // nccl-tests' default: the time averaged over the ranks (the same on every rank
            // afterwards, so every rank keeps the same best). Two doubles, the shape the JIT
            // warm-up's agreement call has too (warmUntilQuiet); the second is unused.
            stats.set(F64, 0, seconds);
            stats.set(F64, 8, 0);
            comm.allReduce(stats, stats, 2, DataType.F64, ReduceOp.SUM);
            best = Math.min(best, stats.get(F64, 0));
        }
        int n = comm.size();
        long totalWrong = wrong == Measurement.NOT_CHECKED ? wrong : wrongOnEveryRank(wrong);
        return Measurement.of(best / n, coll.algBytes(count, o.type.byteSize(), n), coll.busFactor(n),
                totalWrong, iters);
    }

    /**
     * {@code calls} calls of the collective, back to back: every timed loop and warm-up loop. A
     * method of its own, which the JIT warm-up calls thousands of times (once per call), so that
     * the JIT compiles it as a method with every small size in its profile. A loop written inline
     * in a method that runs once per size or per run is compiled only on the stack (OSR), and a
     * new size deoptimizes that code (an uncommon trap): the sizes after it would start their
     * timed calls outside compiled code (`-XX:+PrintCompilation` shows "made not entrant:
     * uncommon trap" between two rows).
     */
    private void runCalls(Slots s, long count, int calls) {
        for (int i = 0; i < calls; i++) {
            coll.run(comm, s, count, o.type, o.op, o.root);
        }
    }

    /** Sentinel everywhere in the output, then this rank's input: unwritten outputs show up as wrong. */
    private void fill(Slots s, long count, TestPattern pattern) {
        long outElems = s.recv().byteSize() / o.type.byteSize();
        for (long j = 0; j < outElems; j++) {
            ElementCodec.put(s.recv(), o.type, j, TestPattern.SENTINEL);
        }
        fillInput(s, count, pattern);
    }

    private void fillInput(Slots s, long count, TestPattern pattern) {
        int rank = comm.rank();
        if (!coll.contributes(rank, o.root)) {
            return;
        }
        long inElems = s.send().byteSize() / o.type.byteSize();
        for (long j = 0; j < inElems; j++) {
            ElementCodec.put(s.send(), o.type, j, pattern.input(rank, j));
        }
    }

    private long verify(Slots s, long count, TestPattern pattern, long bytes, String placement) {
        int rank = comm.rank();
        int n = comm.size();
        long elems = coll.checkedElements(count, n);
        long wrong = 0;
        long first = -1;
        double firstGot = 0;
        double firstWant = 0;
        for (long j = 0; j < elems; j++) {
            double got = ElementCodec.get(s.recv(), o.type, j);
            double want = coll.expected(pattern, rank, n, o.root, count, j);
            if (!pattern.matches(got, want, n)) {
                if (wrong++ == 0) {
                    first = j;
                    firstGot = got;
                    firstWant = want;
                }
            }
        }
        if (wrong > 0) {
            err.printf("%s: rank %d, %s %d B %s: %d wrong elements, first at index %d: %s, expected %s%n", tool, rank,
                    coll.name(), bytes, placement, wrong, first, firstGot, firstWant);
        }
        return wrong;
    }

    private String algorithm(long bytes) {
        return coll.name().equals("allreduce") ? comm.algorithmFor(bytes).envName() : "-";
    }

    /**
     * The allreduce algorithm asked for, by -a or RDMA4J_ALGO (the communicator's options hold
     * either): it runs only where it can (RHD on a power-of-two group, two-hop across hosts, the
     * shared window on shm), elsewhere the policy chooses, which the algo column shows per size.
     */
    private String algorithmLine() {
        Algorithm forced = comm.options().algorithm();
        return forced == null ? "auto (policy)"
                : forced.envName() + " where it can run (else the policy's; the algo column says which ran)";
    }

    private void printHeader(boolean print, Arena arena, List<Long> sizes, String transport) {
        int n = comm.size();
        // every rank's pid and host, for the "Using ranks" block
        MemorySegment mine = arena.allocate(16, 8);
        MemorySegment all = arena.allocate(16L * n, 8);
        mine.set(ValueLayout.JAVA_LONG, 0, ProcessHandle.current().pid());
        mine.set(ValueLayout.JAVA_LONG, 8, comm.topology().hostOf(comm.rank()));
        comm.allGather(mine, all, 2, DataType.I64);
        if (!print) {
            return;
        }
        out.printf("# %s: %s, %d ranks, transport %s, algorithm %s, reduction kernels %s%n", tool, coll.name(), n, transport,
                coll.name().equals("allreduce") ? algorithmLine() : "-",
                Simd.describe());
        out.printf("# minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d%s validation: %d placement: %s%n",
                sizes.getFirst(), sizes.getLast(),
                o.factor > 1 ? fmtFactor(o.factor) + "(factor)" : o.stepBytes + "(bytes)", o.warmups, o.iterations,
                o.maxIterBytes > 0 ? " (fewer where iters x size > " + ByteSizes.format(o.maxIterBytes) + ")" : "",
                o.check ? 1 : 0, o.placement.name().toLowerCase(Locale.ROOT));
        if (o.repeats > 1) {
            out.printf("# best of %d timed blocks per size%n", o.repeats);
        }
        out.println("#");
        out.println("# Using ranks");
        for (int r = 0; r < n; r++) {
            out.printf("#  Rank %2d Pid %7d on host %d%n", r, all.get(ValueLayout.JAVA_LONG, 16L * r),
                    all.get(ValueLayout.JAVA_LONG, 16L * r + 8));
        }
    }

    private static String fmtFactor(double f) {
        return f == Math.rint(f) ? Long.toString((long) f) : Double.toString(f);
    }
}
