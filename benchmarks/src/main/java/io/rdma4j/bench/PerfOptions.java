package io.rdma4j.bench;

import io.rdma4j.bench.coll.BenchCollective;
import io.rdma4j.collectives.Algorithm;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The command line of allreduce-perf / collective-perf, in nccl-tests' terms where nccl-tests
 * has one (except {@code -a}, which here picks the algorithm; nccl-tests' {@code -a} chooses
 * how per-rank times are combined, and this tool always averages them, nccl-tests' default).
 */
public final class PerfOptions {
    public enum Placement { OUT, IN, BOTH }

    public BenchCollective collective;
    public long minBytes = 32L << 20;
    public long maxBytes = 32L << 20;
    public double factor = 1;
    public long stepBytes = 1L << 20;
    public int iterations = 20;
    public int warmups = 5;
    /** Timed blocks per measurement; the best counts. */
    public int repeats = 1;
    /** Rounds of the interleaved phase after the table (0: none): every size once per round, in random order. */
    public int interleaveRounds;
    /**
     * {@code --interleave-buffers warm}: each interleaved call's buffers are read into the cache
     * before it (untimed), so that what remains of its extra time is not the cache's.
     */
    public boolean interleaveWarmBuffers;
    public boolean check = true;
    public DataType type = DataType.F32;
    public ReduceOp op = ReduceOp.SUM;
    public int root;
    /** null: the policy decides. */
    public Algorithm algorithm;
    /** shm, tcp, verbs, auto; null: RDMA4J_TRANSPORT or auto. */
    public String transport;
    /** Local ranks to launch; 0: join the job described by the environment. */
    public int ranks;
    public Placement placement = Placement.BOTH;
    /** 0: no cap; else fewer iterations at sizes where iterations * size would exceed it. */
    public long maxIterBytes;
    public Path csv;
    /**
     * Rounds over the small sizes before the table, so the JIT has compiled what is timed;
     * {@link #JIT_WARMUP_AUTO}: enough rounds for {@link #JIT_WARMUP_CALLS} calls, and at least
     * {@link #JIT_WARMUP_CALLS_PER_SIZE} per size.
     */
    public int jitWarmupRounds = JIT_WARMUP_AUTO;
    public static final int JIT_WARMUP_AUTO = -1;
    public static final long JIT_WARMUP_MAX_BYTES = 256 << 10;
    /**
     * Calls C2 needs before the collective path runs compiled: its tier-4 thresholds are 5,000
     * invocations / 15,000 invocations plus loop iterations, and a 100-round warm-up of a single
     * 8 B size left the first timed column in profiled tier-3 code (5x slower than the next).
     */
    public static final int JIT_WARMUP_CALLS = 20_000;
    /**
     * The fewest automatic warm-up calls of each small size. What a collective runs once per call
     * (an algorithm's set-up, its pipeline's configuration) reaches C2 only after as many calls of
     * that algorithm, and the 20,000 calls split over the eight small sizes of {@code -b 8 -e 2M
     * -f 4} gave the ring (32 and 128 KiB on 2 ranks) 5,000: C2 compiled its set-up while 32 KiB
     * was timed, and a rank that yield-waits hands its core to its compiler thread (2-rank shm,
     * 32 KiB: 255-284 us per call with this 2,500-round warm-up, 20-25 us with 8,000 rounds; 12 us
     * in a run that starts at 32 KiB). Re-measure with {@code -b 8} against {@code -b 32K} and
     * {@code --jit-warmup N}.
     */
    public static final int JIT_WARMUP_CALLS_PER_SIZE = 8_000;
    public boolean help;
    /** The arguments as given, minus --ranks, for launched ranks. */
    public List<String> forwarded = new ArrayList<>();

    /**
     * Parses {@code args}. {@code fixed} is the collective of the tool (allreduce-perf), or null
     * when {@code --op-kind} chooses it (collective-perf).
     */
    public static PerfOptions parse(String[] args, BenchCollective fixed) {
        PerfOptions o = new PerfOptions();
        o.collective = fixed;
        boolean factorGiven = false;
        boolean stepGiven = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String name = a;
            String inline = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                name = a.substring(0, eq);
                inline = a.substring(eq + 1);
            } else if (a.length() > 2 && a.charAt(0) == '-' && a.charAt(1) != '-') {
                name = a.substring(0, 2); // nccl-tests also accepts -b8
                inline = a.substring(2);
            }
            if (name.equals("-h") || name.equals("--help")) {
                o.help = true;
                continue;
            }
            String v = inline;
            int consumed = 0;
            if (v == null) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("option " + name + " needs a value");
                }
                v = args[i + 1];
                consumed = 1;
            }
            boolean forward = true;
            switch (name) {
                case "-b", "--minbytes" -> o.minBytes = ByteSizes.parse(v);
                case "-e", "--maxbytes" -> o.maxBytes = ByteSizes.parse(v);
                case "-f", "--stepfactor" -> {
                    o.factor = parseDouble(name, v);
                    factorGiven = true;
                }
                case "-i", "--stepbytes" -> {
                    o.stepBytes = ByteSizes.parse(v);
                    stepGiven = true;
                }
                case "-n", "--iters" -> o.iterations = parseInt(name, v, 1);
                case "-w", "--warmup_iters", "--warmups" -> o.warmups = parseInt(name, v, 0);
                case "-c", "--check" -> o.check = parseInt(name, v, 0) != 0;
                case "-d", "--datatype" -> o.type = parseType(v);
                case "-o", "--op" -> o.op = parseOp(v);
                case "-r", "--root" -> o.root = parseInt(name, v, 0);
                case "-a", "--algo" -> o.algorithm = v.equalsIgnoreCase("auto") ? null : Algorithm.parse(v);
                case "-t", "--transport" -> o.transport = parseTransport(v);
                case "-p", "--placement" -> o.placement = parsePlacement(v);
                case "--max-iter-bytes" -> o.maxIterBytes = ByteSizes.parse(v);
                case "-R", "--repeats" -> o.repeats = parseInt(name, v, 1);
                case "--csv" -> o.csv = Path.of(v);
                case "--jit-warmup" -> o.jitWarmupRounds = parseInt(name, v, 0);
                case "--interleave" -> o.interleaveRounds = parseInt(name, v, 0);
                case "--interleave-buffers" -> o.interleaveWarmBuffers = switch (v) {
                    case "cold" -> false;
                    case "warm" -> true;
                    default -> throw new IllegalArgumentException("--interleave-buffers is cold or warm, not '" + v + "'");
                };
                case "--op-kind", "--collective" -> {
                    BenchCollective c = BenchCollective.named(v);
                    if (fixed != null && !c.name().equals(fixed.name())) {
                        throw new IllegalArgumentException("this tool measures " + fixed.name() + "; use collective-perf for "
                                + c.name());
                    }
                    o.collective = c;
                }
                case "--ranks" -> {
                    o.ranks = parseInt(name, v, 1);
                    forward = false;
                }
                default -> throw new IllegalArgumentException("unknown option '" + a + "' (see --help)");
            }
            if (forward) {
                o.forwarded.add(a);
                if (consumed == 1) {
                    o.forwarded.add(v);
                }
            }
            i += consumed;
        }
        if (o.help) {
            return o;
        }
        if (o.collective == null) {
            throw new IllegalArgumentException("choose a collective with --op-kind allreduce|reducescatter|allgather|broadcast");
        }
        if (!factorGiven && !stepGiven && o.maxBytes > o.minBytes) {
            o.factor = 2; // a range without a step: nccl-tests users mostly mean doubling
        }
        if (factorGiven && o.factor <= 1 && !stepGiven) {
            throw new IllegalArgumentException("-f must be > 1 (or give -i with -f 1 for a linear step)");
        }
        if (factorGiven && stepGiven && o.factor != 1) {
            throw new IllegalArgumentException("-i steps linearly and goes with -f 1 (or no -f), not -f " + v(o.factor)
                    + "; -f " + v(o.factor) + " alone multiplies");
        }
        // a value other than the default where it changes nothing: the user expected it to
        if (!o.collective.reduces() && o.op != ReduceOp.SUM) {
            throw new IllegalArgumentException("-o applies to reductions; " + o.collective.name() + " reduces nothing");
        }
        if (!o.collective.rooted() && o.root != 0) {
            throw new IllegalArgumentException("-r applies to broadcast; " + o.collective.name() + " has no root");
        }
        if (o.algorithm != null && !o.collective.name().equals("allreduce")) {
            throw new IllegalArgumentException("-a chooses the allreduce algorithm; " + o.collective.name()
                    + " has one of its own");
        }
        o.sizes(); // validates the range
        if (o.csv != null) {
            CsvResults.checkTarget(o.csv);
        }
        if (o.root < 0) {
            throw new IllegalArgumentException("root must be >= 0, got " + o.root);
        }
        if (o.interleaveRounds > 0 && !o.collective.name().equals("allreduce")) {
            throw new IllegalArgumentException("--interleave measures allreduce only, not " + o.collective.name());
        }
        if (o.interleaveWarmBuffers && o.interleaveRounds == 0) {
            throw new IllegalArgumentException("--interleave-buffers warm needs --interleave");
        }
        return o;
    }

    /** The sizes to visit, in bytes. */
    public List<Long> sizes() {
        return ByteSizes.series(minBytes, maxBytes, factor, stepBytes);
    }

    /** Timed iterations at {@code bytes}: {@code -n}, lowered to fit {@code --max-iter-bytes} (at least 1). */
    public int iterationsAt(long bytes) {
        return capped(iterations, bytes, 1);
    }

    /** Warm-up iterations at {@code bytes}: {@code -w}, lowered like the timed ones (at least 1 if any). */
    public int warmupsAt(long bytes) {
        return warmups == 0 ? 0 : capped(warmups, bytes, 1);
    }

    private int capped(int n, long bytes, int floor) {
        if (maxIterBytes <= 0 || bytes == 0 || (long) n * bytes <= maxIterBytes) {
            return n;
        }
        return (int) Math.max(floor, maxIterBytes / bytes);
    }

    public boolean runsOutOfPlace() {
        return placement != Placement.IN && collective.hasOutOfPlace();
    }

    public boolean runsInPlace() {
        return placement != Placement.OUT || !collective.hasOutOfPlace();
    }

    /** nccl-tests' name of a data type. */
    public static String typeName(DataType t) {
        return switch (t) {
            case F32 -> "float";
            case F64 -> "double";
            case F16 -> "half";
            case BF16 -> "bfloat16";
            case I32 -> "int32";
            case I64 -> "int64";
            case U8 -> "uint8";
        };
    }

    public static DataType parseType(String v) {
        return switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "float", "f32", "float32", "fp32" -> DataType.F32;
            case "double", "f64", "float64", "fp64" -> DataType.F64;
            case "half", "f16", "float16", "fp16" -> DataType.F16;
            case "bfloat16", "bf16" -> DataType.BF16;
            case "int32", "i32", "int" -> DataType.I32;
            case "int64", "i64" -> DataType.I64;
            case "uint8", "u8" -> DataType.U8;
            default -> throw new IllegalArgumentException("unknown data type '" + v
                    + "' (expected float, double, half, bfloat16, int32, int64, uint8)");
        };
    }

    public static ReduceOp parseOp(String v) {
        return switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "sum" -> ReduceOp.SUM;
            case "prod" -> ReduceOp.PROD;
            case "min" -> ReduceOp.MIN;
            case "max" -> ReduceOp.MAX;
            case "avg" -> ReduceOp.AVG;
            default -> throw new IllegalArgumentException("unknown reduce op '" + v + "' (expected sum, prod, min, max, avg)");
        };
    }

    /** A {@code -t} value of the tools that run a communicator: shm, tcp, verbs or auto. */
    static String parseTransport(String v) {
        String t = v.trim().toLowerCase(Locale.ROOT);
        if (!t.equals("shm") && !t.equals("tcp") && !t.equals("auto") && !t.equals("verbs")) {
            throw new IllegalArgumentException("unknown transport '" + v + "' (expected shm, tcp, verbs or auto)");
        }
        return t;
    }

    private static Placement parsePlacement(String v) {
        return switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "out", "out-of-place" -> Placement.OUT;
            case "in", "in-place" -> Placement.IN;
            case "both" -> Placement.BOTH;
            default -> throw new IllegalArgumentException("unknown placement '" + v + "' (expected out, in or both)");
        };
    }

    /** An integer of at least {@code min} (a fraction is refused, not truncated). */
    static int parseInt(String option, String v, int min) {
        int n;
        try {
            n = Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("option " + option + " needs an integer, got '" + v + "'");
        }
        if (n < min) {
            throw new IllegalArgumentException("option " + option + " must be >= " + min + ", got " + n);
        }
        return n;
    }

    /** {@code d} as the user wrote it: 1 rather than 1.0. */
    private static String v(double d) {
        return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
    }

    /** A finite number ({@code NaN} and infinities are refused: a factor of NaN stepped linearly, unasked). */
    static double parseDouble(String option, String v) {
        double d;
        try {
            d = Double.parseDouble(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("option " + option + " needs a number, got '" + v + "'");
        }
        if (!Double.isFinite(d)) {
            throw new IllegalArgumentException("option " + option + " needs a finite number, got '" + v + "'");
        }
        return d;
    }

    /** The --help text. */
    public static String usage(String tool, boolean chooseCollective) {
        return """
                usage: bin/rdma4j %s [options]
                  nccl-tests style benchmark of %s over N ranks (separate JVM processes).
                %s  -b, --minbytes SIZE     smallest size (K/M/G suffixes; default 32M)
                  -e, --maxbytes SIZE     largest size (default 32M)
                  -f, --stepfactor F      multiply the size by F (default 2 when -b < -e)
                  -i, --stepbytes SIZE    add SIZE instead (with -f 1 or no -f)
                  -n, --iters N           timed iterations per size (default 20)
                  -w, --warmup_iters N    warm-up iterations per size (default 5)
                  -c, --check 0|1         check the results against a reference (default 1)
                  -d, --datatype T        float double half bfloat16 int32 int64 uint8 (default float)
                  -o, --op OP             sum prod min max avg (default sum; reductions only)
                  -r, --root R            root of broadcast (default 0; broadcast only)
                  -a, --algo A            allreduce algorithm: ring tree rhd twohop window auto (default auto;
                                          sets RDMA4J_ALGO; allreduce only)
                  -t, --transport T       shm tcp verbs auto (default: RDMA4J_TRANSPORT, else auto)
                  -p, --placement P       out, in or both (default both: out-of-place and in-place columns)
                  --ranks N               launch N local ranks as separate JVMs (default 2 when the
                                          environment names no job); without it, and with RANK and
                                          WORLD_SIZE (plus MASTER_ADDR, MASTER_PORT, RDMA4J_JOB_TOKEN)
                                          set, this process joins that job as one rank
                  --max-iter-bytes SIZE   fewer iterations where iterations x size exceeds SIZE
                  -R, --repeats N         time N blocks of iterations, report the best (default 1)
                  --csv FILE              also write the results as CSV (rank 0)
                  --jit-warmup N          rounds over the sizes up to 256K before the table, so
                                          the JIT has compiled what is timed (default: enough
                                          rounds for 20000 calls, at least 8000 per size;
                                          0: none)
                  --interleave N          after the table, N rounds that call every size once in
                                          a random order (the same on every rank), each after a
                                          4-byte allreduce, as a trainer interleaves a scalar
                                          with its gradient buckets, then every size back to
                                          back; prints each size's mean time both ways and
                                          their ratio (allreduce)
                  --interleave-buffers B  cold (default): the interleaved calls find their
                                          buffers where the other sizes left the cache; warm:
                                          each call's buffers are read (untimed) before it, so
                                          the ratio shows what the cache does not explain
                exit status: 0 ok, 1 wrong results, 2 bad usage, 3 a rank failed
                """.formatted(tool, chooseCollective ? "a collective" : "allreduce",
                chooseCollective ? "  --op-kind K             allreduce reducescatter allgather broadcast (required)\n" : "");
    }
}
