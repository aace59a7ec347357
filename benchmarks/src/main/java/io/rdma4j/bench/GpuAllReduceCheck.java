package io.rdma4j.bench;

import io.rdma4j.bench.launch.ExitStatus;
import io.rdma4j.bench.launch.LocalJob;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.gpu.DeviceAllReduce;
import io.rdma4j.cuda.Cuda;
import io.rdma4j.cuda.CudaContext;
import io.rdma4j.cuda.CudaDevice;
import io.rdma4j.cuda.CudaProbe;
import io.rdma4j.cuda.DeviceBuffer;
import io.rdma4j.transport.TransportConfig;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The allreduce step of scripts/gpu-check: ranks on this host (launched as separate JVMs with
 * {@code --ranks N}, or started by any env:// launcher) each take GPU {@code local rank mod
 * device count}, fill a device buffer of f32 with a per-rank pattern, allreduce it (sum) through
 * {@link DeviceAllReduce}, copy it back and compare every element with the exact expected sum.
 * Prints the path taken (and why), the best and median time per allreduce, and PASS or FAIL per
 * rank. The timed calls follow untimed warm-up calls: a JVM's first calls of a multi-MiB
 * allreduce run the reduction kernels interpreted and are tens of times slower (a 4 MiB host
 * allreduce of 2 ranks took 73 ms as a JVM's first call and 0.3 ms once compiled). Beside the
 * device times it prints the same allreduce of host memory, cut into the same chunks, so the cost
 * of the staging shows.
 * Exit status: 0 every rank passed, 1 wrong results, 2 bad usage, 3 a rank failed (no GPU, ...).
 */
public final class GpuAllReduceCheck {
    private static final String TOOL = "gpu-allreduce-check";
    private static final String USAGE = "usage: GpuAllReduceCheck [--ranks N (2)] [--count F32_ELEMENTS (8388608)] "
            + "[--chunk BYTES (4M)] [--warmup N (20)] [--iterations N (10)] [--transport shm|tcp|verbs|auto (environment, else auto)]";

    private int ranks = 2;
    private long count = 8L << 20;
    private long chunk = DeviceAllReduce.DEFAULT_CHUNK_BYTES;
    private int warmup = 20;
    private int iterations = 10;
    private String transport;
    private final List<String> forwarded = new ArrayList<>();

    public static void main(String[] args) {
        ExitStatus.exit(() -> new GpuAllReduceCheck().run(args, System.getenv(), System.out, System.err));
    }

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
        Map<String, String> e = new HashMap<>(env);
        if (transport != null) {
            e.put(TransportConfig.ENV_TRANSPORT, transport);
        }
        CudaProbe probe = Cuda.probe();
        if (!probe.available()) {
            err.println(TOOL + ": " + (PerfTool.inJob(env) ? "rank " + env.get("RANK") + ": " : "") + "no usable GPU: "
                    + probe.status() + ": " + probe.explanation());
            return ExitStatus.FAILED;
        }
        if (!PerfTool.inJob(env)) {
            out.println(TOOL + ": " + ranks + " local ranks, " + count + " f32 (" + ByteSizes.format(count * 4)
                    + ") per rank, chunks of " + ByteSizes.format(chunk));
            // the ranks get --transport through the forwarded arguments
            int status = new LocalJob(TOOL, GpuAllReduceCheck.class.getName(), forwarded, ranks, Map.of(), out, err).run();
            out.println(TOOL + ": " + (status == ExitStatus.OK ? "PASS" : "FAIL (" + ExitStatus.describe(status) + ")"));
            return status;
        }
        try (Communicator comm = Communicator.fromEnvironment(e)) {
            return rank(comm, out, err);
        } catch (RuntimeException ex) {
            err.println(TOOL + ": rank " + e.getOrDefault("RANK", "?") + " failed: " + ex);
            ex.printStackTrace(err);
            return ExitStatus.FAILED;
        }
    }

    private int rank(Communicator comm, PrintStream out, PrintStream err) {
        CudaDevice gpu = Cuda.device(comm.localRank() % Cuda.deviceCount());
        long bytes = count * 4;
        try (CudaContext ctx = gpu.retainPrimaryContext();
             DeviceAllReduce reducer = new DeviceAllReduce(comm, ctx, chunk);
             DeviceBuffer device = ctx.allocate(bytes);
             Arena arena = Arena.ofConfined()) {
            if (comm.rank() == 0) {
                out.println("path: " + reducer.path());
            }
            MemorySegment input = arena.allocate(bytes, 8);
            for (long i = 0; i < count; i++) {
                input.setAtIndex(ValueLayout.JAVA_FLOAT, i, value(comm.rank(), i));
            }
            MemorySegment result = arena.allocate(bytes, 8);
            long[] deviceNanos = new long[iterations];
            String wrong = null;
            for (int it = -warmup; it < iterations && wrong == null; it++) {
                device.copyFromHost(input);
                comm.barrier(); // time the allreduce, not the ranks' arrival
                long t0 = System.nanoTime();
                reducer.allReduce(device, count, DataType.F32, ReduceOp.SUM);
                long t = System.nanoTime() - t0;
                if (it >= 0) {
                    deviceNanos[it] = t;
                }
                device.copyToHost(result);
                wrong = verify(result, comm.size());
            }
            if (wrong != null) {
                err.println("rank " + comm.rank() + ": GPU " + gpu.ordinal() + ", " + ByteSizes.format(bytes) + " over "
                        + comm.provider() + ": FAIL: " + wrong);
                return ExitStatus.WRONG_RESULTS;
            }
            long[] hostNanos = timeHostAllReduce(comm, input, result);
            out.println(String.format(Locale.ROOT, "rank %d: GPU %d (%s, %s), %s over %s, %d calls after %d warm-up: "
                            + "device buffer %s; host buffer, same chunks, %s: PASS", comm.rank(), gpu.ordinal(),
                    gpu.name(), gpu.pciBusId(), ByteSizes.format(bytes), comm.provider(), iterations, warmup,
                    times(deviceNanos, bytes), times(hostNanos, bytes)));
            return ExitStatus.OK;
        }
    }

    /** The host-memory allreduce of the same elements in the same chunks, timed like the device one. */
    private long[] timeHostAllReduce(Communicator comm, MemorySegment input, MemorySegment work) {
        long perChunk = chunk / 4;
        long[] nanos = new long[iterations];
        for (int it = -warmup; it < iterations; it++) {
            work.copyFrom(input);
            comm.barrier();
            long t0 = System.nanoTime();
            for (long first = 0; first < count; first += perChunk) {
                long n = Math.min(perChunk, count - first);
                MemorySegment slice = work.asSlice(first * 4, n * 4);
                comm.allReduce(slice, slice, n, DataType.F32, ReduceOp.SUM);
            }
            long t = System.nanoTime() - t0;
            if (it >= 0) {
                nanos[it] = t;
            }
        }
        return nanos;
    }

    /** "best X ms (algbw Y GB/s), median Z ms" of per-call times. */
    private static String times(long[] nanos, long bytes) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        long best = sorted[0];
        long median = sorted[sorted.length / 2];
        return String.format(Locale.ROOT, "best %.2f ms (algbw %.2f GB/s), median %.2f ms", best / 1e6,
                bytes / (best / 1e9) / 1e9, median / 1e6);
    }

    /** Small integers plus a quarter per rank: every sum is exact in f32. */
    private static float value(int rank, long i) {
        return (i % 251) + 0.25f * rank;
    }

    private String verify(MemorySegment result, int size) {
        for (long i = 0; i < count; i++) {
            float want = 0;
            for (int r = 0; r < size; r++) {
                want += value(r, i);
            }
            float got = result.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            if (got != want) {
                return "element " + i + " is " + got + ", expected " + want;
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
                case "--ranks" -> {
                    ranks = (int) positive(a, v);
                    continue; // the launched ranks are not launchers
                }
                case "--count" -> count = positive(a, v);
                case "--chunk" -> chunk = ByteSizes.parse(v);
                case "--iterations" -> iterations = (int) positive(a, v);
                case "--warmup" -> warmup = (int) nonNegative(a, v);
                case "--transport" -> transport = v.toLowerCase(Locale.ROOT);
                default -> throw new IllegalArgumentException("unknown option '" + a + "'");
            }
            forwarded.add(a);
            forwarded.add(v);
        }
        if (chunk < 64 || chunk % 8 != 0) {
            throw new IllegalArgumentException("--chunk must be a multiple of 8, >= 64: " + chunk);
        }
        if (count > Long.MAX_VALUE / 4) {
            throw new IllegalArgumentException("--count " + count + " is too large");
        }
    }

    private static long positive(String option, String v) {
        return number(option, v, 1, "a positive number");
    }

    private static long nonNegative(String option, String v) {
        return number(option, v, 0, "a number >= 0");
    }

    private static long number(String option, String v, long min, String what) {
        try {
            long n = Long.parseLong(v);
            if (n >= min && n <= Integer.MAX_VALUE * 4L) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(option + " needs " + what + ", got '" + v + "'");
    }
}
