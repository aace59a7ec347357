package io.rdma4j.bench;

import io.rdma4j.bench.check.BytePattern;
import io.rdma4j.bench.launch.ExitStatus;
import io.rdma4j.bench.launch.LocalJob;
import io.rdma4j.bench.verbsperf.JitWarmup;
import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.Transports;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.bootstrap.TcpStore;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code bin/rdma4j p2p-perf}: point-to-point latency and bandwidth of one transport provider
 * between two ranks (separate JVMs), measured as the OSU micro-benchmarks measure MPI (and as
 * our {@code benchmarks/c/osu_style_pt2pt.c} does, with the same CSV columns): latency is half a
 * ping-pong round trip; bandwidth is a window of W two-sided sends answered by one small ack.
 * The buffers are registered with the transport once, as a training job's would be.
 *
 * <p>{@code --measure bandwidth} skips the latency ping-pongs and {@code --bw-bytes} sizes the
 * bandwidth runs by volume: under emulation (Soft-RoCE in qemu) a large message's ping-pongs cost
 * seconds each, and a fixed window count moves far too little at 64 KiB or far too much at 8 MiB.
 */
public final class P2pPerf {
    private static final String TOOL = "p2p-perf";
    private static final int TAG_PING = 1;
    private static final int TAG_DATA = 2;
    private static final int TAG_ACK = 3;
    private static final int TAG_WARMUP = 4;
    /**
     * Warm-up calls of the latency loop per JIT warm-up round (--jit-warmup; three ping-pongs
     * each, spread over the warm-up sizes), and the most rounds before measuring anyway.
     */
    private static final int WARMUP_ROUND_CALLS = 2000;
    private static final int MAX_WARMUP_ROUNDS = 50;
    /** The largest latency size the warm-up ping-pongs at (larger ones take the bandwidth window's path). */
    private static final long WARMUP_MAX_BYTES = 8192;
    /** Message size of the warm-up's bandwidth window: the code path of every larger size too. */
    private static final long WARMUP_BANDWIDTH_BYTES = 64 << 10;
    /**
     * Warm-up latency calls per bandwidth window: a round of the default 2000 calls also runs
     * 250 windows, enough calls for the JIT's thresholds within the first rounds. The quiet round
     * only says that nothing compiled in it; with too few windows per round it comes before a
     * window was hot enough to compile, and C2 then compiles it inside the timed windows.
     */
    private static final int WARMUP_PINGS_PER_WINDOW = 8;

    private long minBytes = 1;
    private long maxBytes = 4L << 20;
    private double factor = 2;
    private int window = 64;
    private int smallIters = 10000;
    private int largeIters = 200;
    private String transport = "shm";
    private boolean latency = true;
    private boolean bandwidth = true;
    /** Bytes each size's timed bandwidth windows move at least; 0: -n/-N divided by 10 windows. */
    private long bwBytes;
    private int jitWarmup = WARMUP_ROUND_CALLS;
    private Path csv;
    private final List<String> forwarded = new ArrayList<>();

    public static void main(String[] args) {
        ExitStatus.exit(() -> new P2pPerf().run(args, System.getenv(), System.out, System.err));
    }

    private static final String USAGE = "usage: bin/rdma4j p2p-perf [-b min] [-e max] [-f factor] [-W window] "
            + "[-n iters<=8K] [-N iters>8K] [-t shm|tcp|verbs] [--measure both|latency|bandwidth] [--bw-bytes SIZE] "
            + "[--jit-warmup LATENCY-CALLS-PER-ROUND] [--csv FILE]";

    int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        if (List.of(args).contains("-h") || List.of(args).contains("--help")) {
            out.println(USAGE);
            return ExitStatus.OK;
        }
        try {
            parse(args);
        } catch (IllegalArgumentException e) {
            err.println(TOOL + ": " + e.getMessage());
            err.println(USAGE);
            return ExitStatus.USAGE;
        }
        if (!PerfTool.inJob(env)) {
            return new LocalJob(TOOL, P2pPerf.class.getName(), forwarded, 2, Map.of(), out, err).run();
        }
        Map<String, String> e = new HashMap<>(env);
        e.put(TransportConfig.ENV_TRANSPORT, transport);
        // the launcher conventions PerfTool.inJob accepts: env://, Open MPI, PMI
        String rankName = firstSet(env, "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK");
        String sizeName = firstSet(env, "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE");
        int rank;
        try {
            rank = Integer.parseInt(env.get(rankName).trim());
        } catch (NumberFormatException | NullPointerException notARank) {
            err.println(TOOL + ": the job's rank is not a number: " + rankName + "='" + env.get(rankName) + "'");
            return ExitStatus.USAGE;
        }
        if (sizeName != null && !env.get(sizeName).trim().equals("2")) {
            err.println(TOOL + ": needs exactly 2 ranks, the job has " + sizeName + "=" + env.get(sizeName).trim());
            return ExitStatus.USAGE;
        }
        TransportConfig config;
        try {
            config = TransportConfig.builder().fromEnvironment(e).build();
        } catch (IllegalArgumentException bad) {
            err.println(TOOL + ": " + bad.getMessage());
            return ExitStatus.USAGE;
        }
        Store store;
        try {
            store = TcpStore.builder().fromEnvironment(e).build();
        } catch (IllegalArgumentException bad) { // a malformed MASTER_PORT, RANK, ...
            err.println(TOOL + ": " + bad.getMessage());
            return ExitStatus.USAGE;
        } catch (RuntimeException ex) {
            err.println(TOOL + ": rank " + rank + " could not reach the job's store: " + JobMembership.describe(ex));
            return ExitStatus.FAILED;
        }
        try (store) {
            Transport t;
            try {
                t = Transports.create(config, store, rank, 2);
            } catch (RuntimeException ex) { // the user's set-up (no device, no library): one line
                err.println(TOOL + ": rank " + rank + " could not create its " + transport + " transport: "
                        + JobMembership.describe(ex));
                return ExitStatus.FAILED;
            }
            try (t) {
                int wrong = measure(t, config.timeoutNanos(), out, err);
                return wrong == 0 ? ExitStatus.OK : ExitStatus.WRONG_RESULTS;
            } catch (RuntimeException | Error ex) {
                err.println(TOOL + ": rank " + rank + " failed: " + ex);
                ex.printStackTrace(err);
                return ExitStatus.FAILED;
            }
        }
    }

    /** The first of {@code names} set (not blank) in {@code env}, null if none is. */
    private static String firstSet(Map<String, String> env, String... names) {
        for (String n : names) {
            String v = env.get(n);
            if (v != null && !v.isBlank()) {
                return n;
            }
        }
        return null;
    }

    private void parse(String[] args) {
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("option " + a + " needs a value");
            }
            String v = args[++i];
            switch (a) {
                case "-b" -> minBytes = ByteSizes.parse(v);
                case "-e" -> maxBytes = ByteSizes.parse(v);
                case "-f" -> factor = PerfOptions.parseDouble(a, v);
                case "-W" -> window = PerfOptions.parseInt(a, v, 1);
                case "-n" -> smallIters = PerfOptions.parseInt(a, v, 1);
                case "-N" -> largeIters = PerfOptions.parseInt(a, v, 1);
                case "-t", "--transport" -> transport = v.toLowerCase(Locale.ROOT);
                case "--csv" -> {
                    csv = Path.of(v);
                    CsvResults.checkTarget(csv);
                }
                case "--measure" -> {
                    latency = v.equals("both") || v.equals("latency");
                    bandwidth = v.equals("both") || v.equals("bandwidth");
                    if (!latency && !bandwidth) {
                        throw new IllegalArgumentException("--measure needs both, latency or bandwidth, got '" + v + "'");
                    }
                }
                case "--bw-bytes" -> bwBytes = ByteSizes.parse(v);
                case "--jit-warmup" -> jitWarmup = PerfOptions.parseInt(a, v, 0);
                default -> throw new IllegalArgumentException("unknown option '" + a + "'");
            }
            forwarded.add(a);
            forwarded.add(v);
        }
        if (!transport.equals("shm") && !transport.equals("tcp") && !transport.equals("verbs")) {
            throw new IllegalArgumentException("unknown transport '" + transport + "' (expected shm, tcp or verbs)");
        }
        ByteSizes.series(minBytes, maxBytes, factor, 0);
        if (window < 1 || window > 1024 || smallIters < 1 || largeIters < 1 || jitWarmup < 0) {
            throw new IllegalArgumentException("need 1 <= -W <= 1024, positive iteration counts and --jit-warmup >= 0");
        }
    }


    /**
     * Prints the table (rank 0) and returns how many of this rank's checks found wrong data: after
     * each size's latency run the last message received, after its bandwidth run (the receiving
     * side) the last message of the last window, each told on {@code err}.
     */
    private int measure(Transport t, long timeout, PrintStream out, PrintStream err) {
        int rank = t.rank();
        int peer = 1 - rank;
        BytePattern mine = new BytePattern(rank);
        BytePattern theirs = new BytePattern(peer);
        int wrong = 0;
        Connection c = t.connection(peer);
        RegisteredBuffer buf = t.allocate(Math.max(maxBytes, 8));
        RegisteredBuffer into = latency ? t.allocate(Math.max(maxBytes, 8)) : buf;
        RegisteredBuffer ack = t.allocate(8);
        long[] reqs = new long[window];
        PrintWriter w = null;
        try {
            if (rank == 0) {
                out.printf("# p2p-perf: transport %s, 2 ranks, window %d%n# %12s %14s %16s%n", t.provider(), window,
                        "size (B)", "latency (us)", "bandwidth (GB/s)");
                if (csv != null) {
                    Path parent = csv.toAbsolutePath().getParent();
                    if (parent != null) {
                        Files.createDirectories(parent);
                    }
                    w = new PrintWriter(Files.newBufferedWriter(csv));
                    w.println("system,transport,test,size_bytes,iters,value,unit");
                }
            }
            // C2 must have compiled the send/receive/poll path before the first size is timed (the
            // per-size skip of iters/10 would leave it in profiled tier-3 code)
            warmUp(t, c, buf, into, ack, reqs, timeout, err);
            mine.fill(buf.segment(), buf.segment().byteSize()); // the warm-up's windows wrote into the receiver's
            for (long bytes : ByteSizes.series(minBytes, maxBytes, factor, 0)) {
                int iters = bytes <= 8192 ? smallIters : largeIters;
                double lat = Double.NaN;
                if (latency) {
                    into.segment().asSlice(0, bytes).fill((byte) 0); // what an earlier size left is no answer
                    lat = latency(t, c, buf, into, bytes, iters, iters / 10 + 1, timeout);
                    wrong += check(theirs, into, bytes, rank, "latency", err);
                }
                int bwIters = bandwidthWindows(bytes, window, iters, bwBytes);
                double bw = Double.NaN;
                if (bandwidth) {
                    bw = bandwidth(t, c, buf, ack, reqs, bytes, bwIters, bwIters / 10 + 1, timeout);
                    if (rank != 0) { // the receiving side: its buffer holds the sender's bytes now
                        wrong += check(theirs, buf, bytes, rank, "bandwidth", err);
                        mine.fill(buf.segment(), bytes);
                    }
                }
                if (rank == 0) {
                    out.printf(Locale.ROOT, "  %12d %14s %16s%n", bytes, latency ? String.format(Locale.ROOT, "%.2f", lat) : "-",
                            bandwidth ? String.format(Locale.ROOT, "%.3f", bw) : "-");
                    out.flush();
                    if (w != null) {
                        if (latency) {
                            w.printf(Locale.ROOT, "rdma4j,%s,latency,%d,%d,%.4f,us%n", t.provider(), bytes, iters, lat);
                        }
                        if (bandwidth) {
                            w.printf(Locale.ROOT, "rdma4j,%s,bandwidth,%d,%d,%.6f,GB/s%n", t.provider(), bytes, bwIters,
                                    bw);
                        }
                        w.flush();
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + csv + ": " + e.getMessage(), e);
        } finally {
            if (w != null) {
                w.close();
            }
        }
        return wrong;
    }

    /** 1 if the first {@code bytes} of {@code got} are not the peer's pattern (told on {@code err}), else 0. */
    private static int check(BytePattern sent, RegisteredBuffer got, long bytes, int rank, String run, PrintStream err) {
        long at = sent.firstDifference(got.segment(), bytes);
        if (at < 0) {
            return 0;
        }
        err.println(TOOL + ": rank " + rank + " received wrong data in the " + run + " run at " + bytes
                + " B: byte " + at + " differs from what the peer sent");
        return 1;
    }

    /**
     * Untimed ping-pongs and bandwidth windows at each warm-up size (and a window of
     * {@link #WARMUP_BANDWIDTH_BYTES}) in rounds until a round passed in which neither
     * side's JIT compiled anything: a C2 compilation still running would share the CPU with the
     * measured loop (and, under emulation, with the kernel's Soft-RoCE work) and be measured as
     * the transport's cost. The sides agree after every round, so they stop together.
     * To check: {@code -XX:+PrintCompilation} must show {@code latency}, {@code sendWindow} and
     * {@code receiveWindow} at tier 4 (no {@code %}: not on-stack replacement) before the first
     * size's result line, and no uncommon trap of them after it.
     */
    private void warmUp(Transport t, Connection c, RegisteredBuffer buf, RegisteredBuffer into, RegisteredBuffer ack,
                        long[] reqs, long timeout, PrintStream err) {
        if (jitWarmup == 0) {
            return;
        }
        int rounds;
        try (RegisteredBuffer flags = t.allocate(16)) {
            List<Long> sizes = warmUpSizes();
            int each = Math.max(1, jitWarmup / sizes.size());
            rounds = JitWarmup.untilQuietTogether(() -> {
                for (long bytes : sizes) {
                    // Many short calls, not one long one: the JIT compiles latency() as a method by its
                    // call count, which a round reaches, where one call per size left its loop
                    // interpreted until C2 replaced it on the stack inside the timed call. Three
                    // ping-pongs (one skipped) take every branch of the timed call, so the compiled
                    // code has no uncommon trap on its path. Skipped when no latency is timed.
                    int calls = latency ? warmUpCalls(bytes, each) : 0;
                    for (int k = 0; k < calls; k++) {
                        latency(t, c, buf, into, bytes, 2, 1, timeout);
                    }
                    if (bandwidth) {
                        bandwidth(t, c, buf, ack, reqs, bytes, warmUpWindows(bytes, each), 0, timeout);
                    }
                }
                if (bandwidth) {
                    bandwidth(t, c, buf, ack, reqs, Math.min(WARMUP_BANDWIDTH_BYTES, maxBytes), 1, 0, timeout);
                }
            }, busy -> eitherBusy(t, c, flags, busy, timeout), MAX_WARMUP_ROUNDS);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (rounds == MAX_WARMUP_ROUNDS && t.rank() == 0) {
            err.println(TOOL + ": the JIT was still busy after " + rounds + " warm-up rounds; the first sizes may "
                    + "include compilation");
        }
    }

    /**
     * Latency warm-up calls at {@code bytes}: {@code each} up to {@link #WARMUP_MAX_BYTES}, then
     * as many as move the same bytes (at least 3): the larger size is there to profile its branch,
     * and {@code each} calls of 16 MiB ping-pongs would move hundreds of GiB per round.
     */
    static int warmUpCalls(long bytes, int each) {
        return (int) Math.max(3, Math.min(each, each * WARMUP_MAX_BYTES / Math.max(1, bytes)));
    }

    /** Bandwidth warm-up windows at {@code bytes}: as many as move the bytes of {@code each / 8} windows of 64 KiB (at least 1). */
    static int warmUpWindows(long bytes, int each) {
        int windows = Math.max(1, each / WARMUP_PINGS_PER_WINDOW);
        return (int) Math.max(1, Math.min(windows, windows * WARMUP_BANDWIDTH_BYTES / Math.max(1, bytes)));
    }

    /**
     * The latency sizes the warm-up ping-pongs at: every timed one up to {@link #WARMUP_MAX_BYTES},
     * and the first timed one above it. One size would leave the copy branches of the others
     * unprofiled (the JDK copies a segment of 64 bytes or more natively and a smaller one in a
     * Java loop; the shm provider copies 8 KiB or more with libc's memmove), and the first size
     * to take such a branch deoptimized the send/receive path and was timed while the JIT
     * compiled it again: 64 B took 5-6 us on shm where 8 B and 512 B took 0.8-0.9, and 32 KiB
     * 23-27 us where it took 1.3 with the memmove branch profiled.
     */
    private List<Long> warmUpSizes() {
        List<Long> sizes = new ArrayList<>();
        for (long bytes : ByteSizes.series(minBytes, maxBytes, factor, 0)) {
            if (bytes <= WARMUP_MAX_BYTES || sizes.isEmpty() || sizes.getLast() <= WARMUP_MAX_BYTES) {
                sizes.add(bytes);
            }
        }
        if (sizes.isEmpty()) {
            sizes.add(Math.min(8, maxBytes));
        }
        return sizes;
    }

    /** Tells the peer whether this side was busy and returns whether either side was. */
    private static boolean eitherBusy(Transport t, Connection c, RegisteredBuffer flags, boolean busy, long timeout) {
        MemorySegment m = flags.segment();
        m.set(ValueLayout.JAVA_INT, 0, busy ? 1 : 0);
        long r = c.irecv(flags, 8, 4, TAG_WARMUP);
        long s = c.isend(flags, 0, 4, TAG_WARMUP);
        t.await(s, timeout);
        t.await(r, timeout);
        return busy || m.get(ValueLayout.JAVA_INT, 8) != 0;
    }

    /**
     * Timed windows of the bandwidth run at {@code bytes}: enough whole windows to move
     * {@code volume} bytes when that is set, else a tenth of the size's iterations (as osu_bw).
     */
    static int bandwidthWindows(long bytes, int window, int iters, long volume) {
        if (volume <= 0) {
            return Math.max(1, iters / 10);
        }
        long perWindow = Math.max(1, bytes) * window;
        return (int) Math.min(Integer.MAX_VALUE, Math.max(1, (volume + perWindow - 1) / perWindow));
    }

    /**
     * Half the round trip of a ping-pong, in microseconds. Each side keeps its next receive posted
     * before it sends (into a buffer of its own), as {@code ib_send_lat} keeps receives posted:
     * on verbs, a receive's clear-to-send then rides in the side's next message instead of going
     * out alone while it waits (docs/verbs-path.md).
     */
    private static double latency(Transport t, Connection c, RegisteredBuffer buf, RegisteredBuffer into, long bytes,
                                  int iters, int skip, long timeout) {
        boolean pinger = t.rank() == 0;
        int total = iters + skip;
        long t0 = 0;
        long r = c.irecv(into, 0, bytes, TAG_PING);
        for (int i = 0; i < total; i++) {
            if (i == skip) {
                t0 = System.nanoTime();
            }
            if (pinger) {
                t.await(c.isend(buf, 0, bytes, TAG_PING), timeout);
            }
            t.await(r, timeout);
            if (i + 1 < total) {
                r = c.irecv(into, 0, bytes, TAG_PING);
            }
            if (!pinger) {
                t.await(c.isend(buf, 0, bytes, TAG_PING), timeout);
            }
        }
        return (System.nanoTime() - t0) / 1e3 / (2.0 * iters);
    }

    /** Bytes per second (in GB/s) of windows of {@code reqs.length} sends, each window acknowledged. */
    private static double bandwidth(Transport t, Connection c, RegisteredBuffer buf, RegisteredBuffer ack,
                                    long[] reqs, long bytes, int iters, int skip, long timeout) {
        boolean sender = t.rank() == 0;
        long t0 = 0;
        for (int i = 0; i < iters + skip; i++) {
            if (i == skip) {
                t0 = System.nanoTime();
            }
            if (sender) {
                sendWindow(t, c, buf, ack, reqs, bytes, timeout);
            } else {
                receiveWindow(t, c, buf, ack, reqs, bytes, timeout);
            }
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        return (double) bytes * reqs.length * iters / seconds / 1e9;
    }

    // One window per call, not a loop over windows inside one method: the JIT then compiles a
    // window by its call count, which the warm-up reaches, rather than replacing a long-running
    // loop on the stack (OSR) once its back edges add up, whenever that happens to be; a
    // compilation in the timed windows takes a CPU from the ranks.
    private static void sendWindow(Transport t, Connection c, RegisteredBuffer buf, RegisteredBuffer ack, long[] reqs,
                                   long bytes, long timeout) {
        long a = c.irecv(ack, 0, 4, TAG_ACK);
        for (int k = 0; k < reqs.length; k++) {
            reqs[k] = c.isend(buf, 0, bytes, TAG_DATA);
        }
        awaitAll(t, reqs, timeout);
        t.await(a, timeout);
    }

    private static void receiveWindow(Transport t, Connection c, RegisteredBuffer buf, RegisteredBuffer ack, long[] reqs,
                                      long bytes, long timeout) {
        for (int k = 0; k < reqs.length; k++) {
            reqs[k] = c.irecv(buf, 0, bytes, TAG_DATA);
        }
        awaitAll(t, reqs, timeout);
        t.await(c.isend(ack, 0, 4, TAG_ACK), timeout);
    }

    private static void awaitAll(Transport t, long[] reqs, long timeout) {
        for (long r : reqs) {
            t.await(r, timeout);
        }
    }
}
