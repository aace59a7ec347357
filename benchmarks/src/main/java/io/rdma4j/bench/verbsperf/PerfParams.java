package io.rdma4j.bench.verbsperf;

import io.rdma4j.verbs.Mtu;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;

/**
 * The command line of verbs-perf: perftest's options (same letters, defaults and the
 * dependencies perftest's force_dependencies applies between them), parsed and resolved.
 */
public final class PerfParams {
    /** perftest's MAX_SIZE: -a runs 2 .. 2^23. */
    public static final int MAX_SIZE = 1 << 23;
    /** perftest turns CQ moderation off above this size unless -Q is given (MSG_SIZE_CQ_MOD_LIMIT). */
    static final int CQ_MOD_SIZE_LIMIT = 8192;
    static final int DEFAULT_TCP_PORT = 18515;
    static final int DEFAULT_CQ_MOD = 100;
    static final int DEFAULT_RX_DEPTH = 512;
    static final int MAX_DEPTH = 1 << 15;

    public final PerfMode mode;
    /** Device name (-d); null = the first device. */
    public final String device;
    public final int ibPort;
    /** GID index (-x); -1 = the port's preferred GID (RoCE v2 IPv4 when there is one). */
    public final int gidIndex;
    public final int[] sizes;
    public final boolean all;
    public final int iters;
    public final int txDepth;
    public final int rxDepth;
    public final int postList;
    public final int cqMod;
    /** Path MTU (-m); null = the port's active MTU. */
    public final Mtu mtu;
    public final int tcpPort;
    /** The server to connect to; null = this side is the server. */
    public final String serverHost;
    /** Inline size (-I); -1 = perftest's default for the mode and device. */
    private final int inlineSize;
    public final boolean noPeak;
    /** Iterations of one unmeasured warm-up round (see {@link #warmupRound}); -1 = by test and size, 0 = none. */
    private final int warmupIters;
    /** Most warm-up rounds per size (rounds stop earlier, once the JIT is quiet). */
    public final int warmupRounds;
    /** Limit of every out-of-band wait (connect, exchange, barrier) in seconds. */
    public final int oobTimeoutSeconds;
    public final boolean help;

    private PerfParams(Builder b) {
        mode = b.mode;
        device = b.device;
        ibPort = b.ibPort;
        gidIndex = b.gidIndex;
        all = b.all;
        if ((all ? 1 : 0) + (b.size > 0 ? 1 : 0) + (b.sizeList != null ? 1 : 0) > 1) {
            throw new IllegalArgumentException("give only one of -s, -a and --sizes");
        }
        int size = b.size > 0 ? b.size : mode.defaultSize();
        sizes = all ? IntStream.rangeClosed(1, 23).map(i -> 1 << i).toArray()
                : b.sizeList != null ? b.sizeList : new int[]{size};
        iters = b.iters > 0 ? b.iters : mode.defaultIters();
        txDepth = Math.min(b.txDepth > 0 ? b.txDepth : mode.defaultTxDepth(), iters);
        rxDepth = mode.usesReceives() ? Math.min(b.rxDepth > 0 ? b.rxDepth : DEFAULT_RX_DEPTH, iters) : 1;
        postList = b.postList;
        int q = b.cqMod > 0 ? b.cqMod : DEFAULT_CQ_MOD;
        if (mode.isBandwidth() && sizes.length == 1 && sizes[0] > CQ_MOD_SIZE_LIMIT && b.cqMod == 0) {
            q = 1; // completions are rare enough at this size; moderation would only skew the peak
        }
        if (postList > 1) {
            if (!mode.isBandwidth()) {
                throw new IllegalArgumentException("a post list (-l) is supported in bandwidth tests only");
            }
            if (iters % postList != 0) {
                throw new IllegalArgumentException("the number of iterations (-n " + iters
                        + ") must be a multiple of the post list size (-l " + postList + ")");
            }
            if (postList > txDepth) {
                throw new IllegalArgumentException("the post list (-l " + postList + ") does not fit the TX depth (-t "
                        + txDepth + ")");
            }
            if (b.cqMod == 0) {
                q = postList;
            } else if (postList % b.cqMod != 0) {
                throw new IllegalArgumentException("the post list size (-l " + postList
                        + ") must be a multiple of the CQ moderation (-Q " + b.cqMod + ")");
            }
        }
        cqMod = Math.min(q, txDepth);
        mtu = b.mtu;
        tcpPort = b.tcpPort;
        serverHost = b.serverHost;
        inlineSize = b.inlineSize;
        noPeak = b.noPeak || iters > 20000;
        warmupIters = b.warmupIters;
        warmupRounds = b.warmupRounds;
        oobTimeoutSeconds = b.oobTimeoutSeconds;
        help = b.help;
    }

    public boolean isServer() {
        return serverHost == null;
    }

    /**
     * Iterations per warm-up round for messages of {@code size}: as given, else 5000 round trips
     * for latency tests and about 8 MiB of writes (32..5000 messages) for bandwidth.
     */
    public int warmupRound(int size) {
        if (warmupIters >= 0) {
            return warmupIters;
        }
        return mode.isBandwidth() ? Math.clamp((8 << 20) / size, 32, 5000) : 5000;
    }

    /** The longest warm-up round any size needs (for sizing the timestamp arrays). */
    int maxWarmupRound() {
        return warmupIters >= 0 ? warmupIters : 5000;
    }

    public int maxSize() {
        return sizes[sizes.length - 1];
    }

    /** The inline size to use on {@code deviceName}. */
    public int inlineSize(String deviceName) {
        return inlineSize >= 0 ? inlineSize : mode.defaultInline(deviceName);
    }

    /**
     * What both sides must agree on; exchanged out of band so that a server and a client started
     * with different options fail at once instead of waiting for each other.
     */
    String fingerprint() {
        return mode.modeName() + " sizes=" + Arrays.toString(sizes) + " iters=" + iters
                + " warmup=" + (warmupIters < 0 ? "auto" : Integer.toString(warmupIters)) + "x" + warmupRounds;
    }

    public static PerfParams parse(String[] args) {
        if (args.length == 0) {
            throw new IllegalArgumentException("no test given: write_bw, send_lat or write_lat");
        }
        if (args[0].equals("-h") || args[0].equals("--help")) {
            Builder b = new Builder(PerfMode.WRITE_BW);
            b.help = true;
            return new PerfParams(b);
        }
        Builder b = new Builder(PerfMode.of(args[0]));
        List<String> positional = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("-") || a.equals("-")) {
                positional.add(a);
                continue;
            }
            String name;
            String inlineValue = null;
            if (a.startsWith("--")) {
                int eq = a.indexOf('=');
                name = eq < 0 ? a.substring(2) : a.substring(2, eq);
                inlineValue = eq < 0 ? null : a.substring(eq + 1);
            } else {
                name = a.substring(1, 2);
                inlineValue = a.length() > 2 ? a.substring(2) : null;
            }
            Option o = Option.of(name);
            String value = null;
            if (o.takesValue) {
                if (inlineValue != null) {
                    value = inlineValue;
                } else if (i + 1 < args.length) {
                    value = args[++i];
                } else {
                    throw new IllegalArgumentException("option " + a + " needs a value");
                }
            } else if (inlineValue != null) {
                throw new IllegalArgumentException("option " + a + " takes no value");
            }
            o.apply(b, value, a);
        }
        if (positional.size() > 1) {
            throw new IllegalArgumentException("more than one server address given: " + positional);
        }
        b.serverHost = positional.isEmpty() ? null : positional.get(0);
        return new PerfParams(b);
    }

    private enum Option {
        ALL("a", "all", false),
        DEVICE("d", "ib-dev", true),
        CPU_FREQ("F", "CPU-freq", false),
        HELP("h", "help", false),
        IB_PORT("i", "ib-port", true),
        INLINE("I", "inline_size", true),
        POST_LIST("l", "post_list", true),
        MTU("m", "mtu", true),
        ITERS("n", "iters", true),
        NO_PEAK("N", "noPeak", false),
        TCP_PORT("p", "port", true),
        CQ_MOD("Q", "cq-mod", true),
        RX_DEPTH("r", "rx-depth", true),
        SIZE("s", "size", true),
        SIZES(null, "sizes", true),
        TX_DEPTH("t", "tx-depth", true),
        GID_INDEX("x", "gid-index", true),
        WARMUP(null, "warmup", true),
        WARMUP_ROUNDS(null, "warmup-rounds", true),
        OOB_TIMEOUT(null, "oob-timeout", true);

        final String shortName;
        final String longName;
        final boolean takesValue;

        Option(String shortName, String longName, boolean takesValue) {
            this.shortName = shortName;
            this.longName = longName;
            this.takesValue = takesValue;
        }

        static Option of(String name) {
            for (Option o : values()) {
                if (name.equals(o.shortName) || name.equals(o.longName)) {
                    return o;
                }
            }
            throw new IllegalArgumentException("unknown option '" + name + "' (see --help)");
        }

        void apply(Builder b, String v, String given) {
            switch (this) {
                case ALL -> b.all = true;
                case DEVICE -> b.device = v;
                case CPU_FREQ -> { } // perftest's cpufreq warning switch; verbs-perf times with nanoTime
                case HELP -> b.help = true;
                case IB_PORT -> b.ibPort = number(given, v, 1, 255);
                case INLINE -> b.inlineSize = number(given, v, 0, 1024);
                case POST_LIST -> b.postList = number(given, v, 1, MAX_DEPTH);
                case MTU -> b.mtu = mtu(given, v);
                case ITERS -> b.iters = number(given, v, 5, 100_000_000);
                case NO_PEAK -> b.noPeak = true;
                case TCP_PORT -> b.tcpPort = number(given, v, 1, 65535);
                case CQ_MOD -> b.cqMod = number(given, v, 1, 1024);
                case RX_DEPTH -> b.rxDepth = number(given, v, 1, MAX_DEPTH);
                case SIZE -> b.size = number(given, v, 1, MAX_SIZE);
                case SIZES -> b.sizeList = sizeList(given, v);
                case TX_DEPTH -> b.txDepth = number(given, v, 1, MAX_DEPTH);
                case GID_INDEX -> b.gidIndex = number(given, v, 0, 255);
                case WARMUP -> b.warmupIters = number(given, v, 0, 100_000_000);
                case WARMUP_ROUNDS -> b.warmupRounds = number(given, v, 2, 1000);
                case OOB_TIMEOUT -> b.oobTimeoutSeconds = number(given, v, 1, 86_400);
            }
        }
    }

    private static int number(String option, String v, int min, int max) {
        long n;
        try {
            n = Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("option " + option + ": '" + v + "' is not a number");
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException("option " + option + ": " + n + " is outside [" + min + ", " + max + "]");
        }
        return (int) n;
    }

    /** A comma-separated list of sizes, ascending (an extension: perftest has only -s and -a). */
    private static int[] sizeList(String option, String v) {
        String[] parts = v.split(",");
        int[] list = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            list[i] = number(option, parts[i], 1, MAX_SIZE);
            if (i > 0 && list[i] <= list[i - 1]) {
                throw new IllegalArgumentException("option " + option + ": sizes must ascend, " + list[i]
                        + " follows " + list[i - 1]);
            }
        }
        return list;
    }

    private static Mtu mtu(String option, String v) {
        int bytes = number(option, v, 256, 4096);
        for (Mtu m : Mtu.values()) {
            if (m.bytes() == bytes) {
                return m;
            }
        }
        throw new IllegalArgumentException("option " + option + ": MTU must be 256, 512, 1024, 2048 or 4096, not " + bytes);
    }

    private static final class Builder {
        final PerfMode mode;
        String device;
        int ibPort = 1;
        int gidIndex = -1;
        int size;
        int[] sizeList;
        boolean all;
        int iters;
        int txDepth;
        int rxDepth;
        int postList = 1;
        int cqMod;
        Mtu mtu;
        int tcpPort = DEFAULT_TCP_PORT;
        String serverHost;
        int inlineSize = -1;
        boolean noPeak;
        int warmupIters = -1;
        int warmupRounds = 30;
        int oobTimeoutSeconds = 300;
        boolean help;

        Builder(PerfMode mode) {
            this.mode = mode;
        }
    }

    public static String usage() {
        return """
                usage: verbs-perf <test> [options]              server side
                       verbs-perf <test> [options] <server>     client side
                tests (Java equivalents of perftest's programs, same options and output columns):
                  write_bw    ib_write_bw   RDMA write bandwidth, client -> server
                  send_lat    ib_send_lat   send/receive ping-pong latency
                  write_lat   ib_write_lat  RDMA write ping-pong latency
                options (both sides must be given the same test options):
                  -d, --ib-dev=<dev>        device (default: the first one)
                  -i, --ib-port=<port>      device port (default 1)
                  -x, --gid-index=<index>   GID index (default: the port's RoCE v2 IPv4 GID, if any)
                  -m, --mtu=<mtu>           path MTU 256..4096 (default: the port's active MTU)
                  -s, --size=<bytes>        message size (default 65536 for bw, 2 for lat)
                  -a, --all                 all sizes 2 .. 2^23
                      --sizes=<a,b,...>     these sizes, ascending, in one run (not in perftest)
                  -n, --iters=<n>           iterations (default 5000 for bw, 1000 for lat; at least 5)
                  -t, --tx-depth=<n>        send queue depth (default 128 for bw, 1 for lat)
                  -r, --rx-depth=<n>        receive queue depth of send_lat (default 512)
                  -l, --post_list=<n>       work requests per post_send (one doorbell per list; bw only)
                  -Q, --cq-mod=<n>          signal every n-th work request (default 100; 1 above 8 KiB)
                  -I, --inline_size=<n>     inline payloads up to n bytes (default as perftest: 236 send_lat,
                                            220 write_lat, 0 for bw and on Soft-RoCE/siw)
                  -N, --noPeak              skip the peak bandwidth calculation (implied above 20000 iterations)
                  -p, --port=<port>         TCP port of the out-of-band exchange (default 18515)
                  -F, --CPU-freq            accepted and ignored (times come from System.nanoTime)
                      --warmup=<n>          iterations per unmeasured warm-up round before each size; rounds
                                            repeat until the JIT is quiet (default: 5000 for latency, about
                                            8 MiB of writes for bw; 0 = no warm-up)
                      --warmup-rounds=<n>   most warm-up rounds per size (default 30)
                      --oob-timeout=<secs>  limit of every out-of-band wait (default 300)
                  -h, --help                this text
                On few CPUs, pin each side (taskset) and run the JVM with RDMA4J_JAVA_OPTS=-XX:+UseSerialGC:
                the measured loops allocate nothing, and no collector thread then competes with the polling one.
                """;
    }
}
