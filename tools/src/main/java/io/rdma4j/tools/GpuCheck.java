package io.rdma4j.tools;

import io.rdma4j.cuda.Cuda;
import io.rdma4j.cuda.CudaContext;
import io.rdma4j.cuda.CudaDevice;
import io.rdma4j.cuda.CudaEvent;
import io.rdma4j.cuda.CudaException;
import io.rdma4j.cuda.CudaMemoryType;
import io.rdma4j.cuda.CudaProbe;
import io.rdma4j.cuda.CudaStream;
import io.rdma4j.cuda.DeviceBuffer;
import io.rdma4j.cuda.DmaBuf;
import io.rdma4j.cuda.PinnedHostBuffer;

import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * One-shot check of a GPU machine through rdma4j's CUDA layer (run by scripts/gpu-check):
 * allocates device and pinned memory, copies host -> device -> device -> host and through
 * slices on a stream, verifies every byte, checks pointer attributes, tries a dma-buf export,
 * then times pinned H2D / D2H / D2D copies with CUDA events the way the CUDA samples'
 * bandwidthTest does (decimal GB/s; D2D counts read + write), to compare with its numbers.
 *
 * <p>Exit status: 0 all checks passed, 1 a check failed, 2 bad arguments, 3 no usable GPU (the
 * reason is printed).
 */
public final class GpuCheck {
    static final int PASSED = 0;
    static final int FAILED = 1;
    static final int USAGE = 2;
    static final int NO_GPU = 3;

    private static final String USAGE_TEXT = """
            usage: GpuCheck [--device N] [--size BYTES[K|M|G]] [--iterations N] [--timeout-seconds S]
              --device N           CUDA device ordinal (default 0)
              --size BYTES         transfer size of checks and bandwidth runs (default 64M)
              --iterations N       timed copies per direction, after 2 untimed ones (default 20)
              --timeout-seconds S  bound of every wait for the GPU (default 60)""";

    private final PrintStream out;
    private final List<String> failures = new ArrayList<>();
    private int device;
    private long size = 64L << 20;
    private int iterations = 20;
    private long timeoutNanos = TimeUnit.SECONDS.toNanos(60);

    private GpuCheck(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out));
    }

    /** Runs the check, printing to {@code out}; returns the exit status. */
    public static int run(String[] args, PrintStream out) {
        GpuCheck check = new GpuCheck(out);
        if (List.of(args).contains("-h") || List.of(args).contains("--help")) {
            out.println(USAGE_TEXT);
            return PASSED;
        }
        try {
            check.parse(args);
        } catch (IllegalArgumentException e) {
            out.println("gpu-check: " + e.getMessage());
            out.println(USAGE_TEXT);
            return USAGE;
        }
        return check.run();
    }

    private void parse(String[] args) {
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("missing value after " + a);
            }
            String v = args[++i];
            switch (a) {
                case "--device" -> device = Integer.parseInt(v);
                case "--size" -> size = parseBytes(v);
                case "--iterations" -> iterations = Integer.parseInt(v);
                case "--timeout-seconds" -> timeoutNanos = TimeUnit.SECONDS.toNanos(Long.parseLong(v));
                default -> throw new IllegalArgumentException("unknown option " + a);
            }
        }
        if (device < 0 || size < 4096 || iterations < 1 || timeoutNanos <= 0) {
            throw new IllegalArgumentException("need --device >= 0, --size >= 4096, --iterations >= 1, --timeout-seconds >= 1");
        }
    }

    static long parseBytes(String v) {
        String s = v.trim().toUpperCase(Locale.ROOT);
        int shift = switch (s.isEmpty() ? ' ' : s.charAt(s.length() - 1)) {
            case 'K' -> 10;
            case 'M' -> 20;
            case 'G' -> 30;
            default -> 0;
        };
        long n = Long.parseLong(shift == 0 ? s : s.substring(0, s.length() - 1));
        if (n < 0 || n > (Long.MAX_VALUE >> shift)) {
            throw new IllegalArgumentException("bad size " + v);
        }
        return n << shift;
    }

    private int run() {
        out.println("rdma4j gpu-check (Java " + Runtime.version() + ")");
        CudaProbe probe = Cuda.probe();
        if (!probe.available()) {
            out.println("No usable GPU (" + probe.status() + "): " + probe.explanation());
            out.println("Result = SKIPPED (no GPU)");
            return NO_GPU;
        }
        out.println("CUDA driver   : " + probe.library().orElseThrow() + ", version " + probe.driverVersionString()
                + " (" + probe.driverVersion() + "), " + probe.deviceCount() + " device(s)");
        if (device >= probe.deviceCount()) {
            out.println("gpu-check: --device " + device + " does not exist (" + probe.deviceCount() + " device(s))");
            return USAGE;
        }
        try {
            CudaDevice dev = Cuda.device(device);
            describe(dev);
            try (CudaContext context = dev.retainPrimaryContext()) {
                checkCopies(context);
                checkDmaBuf(dev, context);
                measureBandwidth(context);
            }
        } catch (RuntimeException e) {
            fail("unexpected " + e);
            e.printStackTrace(out);
        }
        if (failures.isEmpty()) {
            out.println("Result = PASS");
            return PASSED;
        }
        out.println("Result = FAIL (" + failures.size() + " check(s) failed: " + String.join("; ", failures) + ")");
        return FAILED;
    }

    private void describe(CudaDevice dev) {
        out.printf(Locale.ROOT, "Device %d      : %s, PCI %s, compute capability %s, %.1f GiB, %d SMs%n", dev.ordinal(),
                dev.name(), dev.pciBusId(), dev.computeCapability(), dev.totalMemory() / (double) (1L << 30),
                dev.multiprocessorCount());
        out.println("                unified addressing " + yesNo(dev.unifiedAddressing()) + ", dma-buf export "
                + yesNo(dev.dmaBufSupported()) + ", GPUDirect RDMA " + yesNo(dev.gpuDirectRdmaSupported()));
    }

    private void checkCopies(CudaContext context) {
        try (DeviceBuffer a = context.allocate(size);
             DeviceBuffer b = context.allocate(size);
             PinnedHostBuffer source = context.allocatePinned(size);
             PinnedHostBuffer target = context.allocatePinned(size);
             CudaStream stream = context.createStream()) {
            MemorySegment src = source.segment();
            MemorySegment dst = target.segment();
            fillPattern(src);

            a.copyFromHost(src);
            b.copyFrom(a);
            dst.fill((byte) 0);
            b.copyToHost(dst);
            verify("host -> device -> device -> host copy of " + size + " bytes", src, dst);

            b.fill((byte) 0xA5);
            b.copyToHost(dst);
            long bad = firstNot(dst, (byte) 0xA5);
            check("memset of " + size + " bytes", bad < 0, "byte " + bad + " is not 0xA5");

            // unaligned slices on a stream: the offset arithmetic of both sides
            long offset = 4096 + 3;
            long length = Math.max(1, size / 2 - 4096 - 5);
            dst.fill((byte) 0);
            a.slice(offset, length).copyToHostAsync(0, dst, 17, length, stream);
            stream.synchronize(timeoutNanos);
            verify("async copy of slice [" + offset + ", +" + length + ") to host offset 17",
                    src.asSlice(offset, length), dst.asSlice(17, length));
            b.fillAsync((byte) 0, stream);
            b.slice(offset, length).copyFromHostAsync(src, offset, 0, length, stream);
            b.copyToHostAsync(0, dst, 0, size, stream);
            stream.synchronize(timeoutNanos);
            verify("async host -> device slice copy", src.asSlice(offset, length), dst.asSlice(offset, length));
            check("bytes around the slice untouched", firstNot(dst.asSlice(0, offset), (byte) 0) < 0
                    && firstNot(dst.asSlice(offset + length), (byte) 0) < 0, "a copy wrote outside its slice");

            CudaMemoryType type = a.memoryType();
            int ordinal = a.deviceOrdinal();
            check("pointer attributes of device memory", type == CudaMemoryType.DEVICE && ordinal == device,
                    "memory type " + type + ", device ordinal " + ordinal);
            CudaMemoryType pinnedType = source.memoryType();
            check("pointer attributes of pinned memory", pinnedType == CudaMemoryType.HOST, "memory type " + pinnedType);
        }
    }

    private void checkDmaBuf(CudaDevice dev, CudaContext context) {
        try (DeviceBuffer buffer = context.allocate(size); DmaBuf dmaBuf = buffer.exportDmaBuf()) {
            out.println("[INFO] dma-buf export: " + dmaBuf);
        } catch (CudaException e) {
            out.println((dev.dmaBufSupported() ? "[WARN]" : "[INFO]") + " dma-buf export not available: "
                    + e.getMessage());
        }
    }

    private void measureBandwidth(CudaContext context) {
        try (DeviceBuffer a = context.allocate(size);
             DeviceBuffer b = context.allocate(size);
             PinnedHostBuffer host = context.allocatePinned(size);
             CudaStream stream = context.createStream();
             CudaEvent start = context.createEvent();
             CudaEvent end = context.createEvent()) {
            fillPattern(host.segment());
            a.copyFromHost(host.segment());
            MemorySegment h = host.segment();
            double h2d = time(stream, start, end, () -> a.copyFromHostAsync(h, 0, 0, size, stream));
            double d2h = time(stream, start, end, () -> a.copyToHostAsync(0, h, 0, size, stream));
            double d2d = time(stream, start, end, () -> b.copyFromAsync(a, stream));
            report("Host to Device", size / h2d);
            report("Device to Host", size / d2h);
            report("Device to Device", 2.0 * size / d2d);
            out.println("(GB/s = 10^9 bytes/s, CUDA-event timed, " + iterations + " copies per size, as the CUDA "
                    + "samples' bandwidthTest --memory=pinned counts; Device to Device counts read + write)");
        }
    }

    /** Seconds per copy: 2 untimed copies, then {@code iterations} between two events. */
    private double time(CudaStream stream, CudaEvent start, CudaEvent end, Runnable copy) {
        copy.run();
        copy.run();
        start.record(stream);
        for (int i = 0; i < iterations; i++) {
            copy.run();
        }
        end.record(stream);
        end.synchronize(timeoutNanos);
        double seconds = end.elapsedMillisSince(start) / 1e3;
        return Math.max(seconds, 1e-9) / iterations;
    }

    private void report(String direction, double bytesPerSecond) {
        out.println(" " + direction + " Bandwidth, 1 Device(s)");
        out.println(" PINNED Memory Transfers");
        out.println("   Transfer Size (Bytes)\tBandwidth(GB/s)");
        out.printf(Locale.ROOT, "   %d\t\t\t%.1f%n%n", size, bytesPerSecond / 1e9);
    }

    /** A pattern without short periods, so that a shifted or repeated block does not compare equal. */
    static void fillPattern(MemorySegment s) {
        long words = s.byteSize() / 8;
        for (long i = 0; i < words; i++) {
            s.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, mix(i));
        }
        for (long i = words * 8; i < s.byteSize(); i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) mix(i));
        }
    }

    private static long mix(long i) {
        long z = i * 0x9E3779B97F4A7C15L + 0x632BE59BD9B4E019L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        return z ^ (z >>> 31);
    }

    private static long firstNot(MemorySegment s, byte value) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != value) {
                return i;
            }
        }
        return -1;
    }

    private void verify(String what, MemorySegment expected, MemorySegment actual) {
        long at = expected.mismatch(actual);
        check(what, at < 0, at < 0 ? "" : "mismatch at byte " + at + ": expected 0x"
                + hex(expected, at) + ", got 0x" + hex(actual, at));
    }

    private static String hex(MemorySegment s, long at) {
        return at < s.byteSize() ? Integer.toHexString(s.get(ValueLayout.JAVA_BYTE, at) & 0xFF) : "(end)";
    }

    private void check(String what, boolean ok, String detail) {
        if (ok) {
            out.println("[PASS] " + what);
        } else {
            fail(what + ": " + detail);
        }
    }

    private void fail(String what) {
        out.println("[FAIL] " + what);
        failures.add(what);
    }

    private static String yesNo(boolean b) {
        return b ? "yes" : "no";
    }
}
