package io.rdma4j.gpu;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.cuda.Cuda;
import io.rdma4j.cuda.CudaContext;
import io.rdma4j.cuda.DeviceBuffer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank of {@link DeviceAllReduceStubTest}, in a JVM of its own with the stub libcuda
 * (RDMA4J_LIBCUDA, two fake devices): device = rank, allreduces device buffers through
 * {@link DeviceAllReduce} with 4 KiB chunks and checks every element, including that bytes past
 * the count stay untouched, then the argument errors. Prints "PATH ..." and
 * "DEVICE ALLREDUCE OK", or every failure, and exits 0 or 1.
 */
public final class DeviceAllReduceRank {
    static final long CHUNK = 4096;

    private DeviceAllReduceRank() {
    }

    public static void main(String[] args) {
        List<String> failures = new ArrayList<>();
        int code = 0;
        try (Communicator comm = Communicator.fromEnvironment();
             CudaContext ctx = Cuda.device(comm.localRank() % Cuda.deviceCount()).retainPrimaryContext();
             CudaContext otherGpu = Cuda.device((comm.localRank() + 1) % Cuda.deviceCount()).retainPrimaryContext();
             DeviceAllReduce gpu = new DeviceAllReduce(comm, ctx, CHUNK);
             Arena arena = Arena.ofConfined()) {
            System.out.println("PATH " + gpu.path());
            // one element; less than a chunk; chunks of both slots several times plus a short one
            for (long count : new long[] {1, 1000, 5 * CHUNK / 4 + 7}) {
                sumF32(comm, ctx, gpu, arena, count, failures);
            }
            maxI64(comm, ctx, gpu, arena, 3 * CHUNK / 8 + 3, failures);
            errors(comm, ctx, otherGpu, gpu, failures);
            sumF32(comm, ctx, gpu, arena, 2 * CHUNK / 4, failures); // still usable after rejected calls
        } catch (Throwable t) {
            System.out.println("rank " + System.getenv("RANK") + " threw:");
            t.printStackTrace(System.out);
            code = 1;
        }
        failures.forEach(f -> System.out.println("FAIL " + f));
        if (code == 0 && failures.isEmpty()) {
            System.out.println("DEVICE ALLREDUCE OK");
        } else {
            code = 1;
        }
        System.out.flush();
        System.exit(code);
    }

    private static float f32(int rank, long i) {
        return (i % 97) + 1000f * rank + 0.5f; // small, exactly representable sums
    }

    private static void sumF32(Communicator comm, CudaContext ctx, DeviceAllReduce gpu, Arena arena, long count,
                               List<String> failures) {
        long bytes = count * 4;
        long spare = 12; // past the count: must come back untouched
        MemorySegment host = arena.allocate(bytes + spare, 8);
        for (long i = 0; i < count; i++) {
            host.setAtIndex(ValueLayout.JAVA_FLOAT, i, f32(comm.rank(), i));
        }
        host.asSlice(bytes, spare).fill((byte) 0x5A);
        try (DeviceBuffer device = ctx.allocate(bytes + spare)) {
            device.copyFromHost(host);
            gpu.allReduce(device, count, DataType.F32, ReduceOp.SUM);
            MemorySegment got = arena.allocate(bytes + spare, 8);
            device.copyToHost(got);
            for (long i = 0; i < count; i++) {
                float want = 0;
                for (int r = 0; r < comm.size(); r++) {
                    want += f32(r, i);
                }
                float v = got.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                if (v != want) {
                    failures.add("f32 sum of " + count + ": element " + i + " is " + v + ", expected " + want);
                    return;
                }
            }
            if (got.asSlice(bytes, spare).mismatch(host.asSlice(bytes, spare)) != -1) {
                failures.add("f32 sum of " + count + ": bytes past the count were overwritten");
            }
        }
    }

    private static void maxI64(Communicator comm, CudaContext ctx, DeviceAllReduce gpu, Arena arena, long count,
                               List<String> failures) {
        MemorySegment host = arena.allocate(count * 8, 8);
        for (long i = 0; i < count; i++) {
            host.setAtIndex(ValueLayout.JAVA_LONG, i, (i % 2 == comm.rank() % 2 ? 1L << 40 : 0) + i * 3 + comm.rank());
        }
        try (DeviceBuffer device = ctx.allocate(count * 8)) {
            device.copyFromHost(host);
            gpu.allReduce(device, count, DataType.I64, ReduceOp.MAX);
            device.copyToHost(host);
            for (long i = 0; i < count; i++) {
                long want = Long.MIN_VALUE;
                for (int r = 0; r < comm.size(); r++) {
                    want = Math.max(want, (i % 2 == r % 2 ? 1L << 40 : 0) + i * 3 + r);
                }
                if (host.getAtIndex(ValueLayout.JAVA_LONG, i) != want) {
                    failures.add("i64 max of " + count + ": element " + i + " is "
                            + host.getAtIndex(ValueLayout.JAVA_LONG, i) + ", expected " + want);
                    return;
                }
            }
        }
    }

    /** Argument errors: thrown before any collective, so the ranks stay in step. */
    private static void errors(Communicator comm, CudaContext ctx, CudaContext otherGpu, DeviceAllReduce gpu,
                               List<String> failures) {
        DeviceBuffer freed = ctx.allocate(64);
        freed.close();
        expect(failures, IllegalStateException.class, "its memory was freed",
                () -> gpu.allReduce(freed, 16, DataType.F32, ReduceOp.SUM));
        try (DeviceBuffer small = ctx.allocate(64);
             DeviceBuffer foreign = otherGpu.allocate(64)) {
            expect(failures, IllegalArgumentException.class, "allreduce of 17 F32 elements needs 68 bytes",
                    () -> gpu.allReduce(small, 17, DataType.F32, ReduceOp.SUM));
            expect(failures, IllegalArgumentException.class, "negative element count",
                    () -> gpu.allReduce(small, -1, DataType.F32, ReduceOp.SUM));
            expect(failures, IllegalArgumentException.class, "is not in",
                    () -> gpu.allReduce(foreign, 4, DataType.F32, ReduceOp.SUM));
        }
        try (DeviceAllReduce closed = new DeviceAllReduce(comm, ctx, 64);
             DeviceBuffer b = ctx.allocate(64)) {
            closed.close();
            expect(failures, IllegalStateException.class, "is closed",
                    () -> closed.allReduce(b, 4, DataType.F32, ReduceOp.SUM));
        }
        expect(failures, IllegalArgumentException.class, "multiple of 8", () -> new DeviceAllReduce(comm, ctx, 100));
    }

    private static void expect(List<String> failures, Class<? extends Exception> type, String text, Runnable call) {
        try {
            call.run();
            failures.add("no " + type.getSimpleName() + " (\"" + text + "\")");
        } catch (Exception e) {
            if (!type.isInstance(e) || e.getMessage() == null || !e.getMessage().contains(text)) {
                failures.add("expected " + type.getSimpleName() + " containing \"" + text + "\", got " + e);
            } else {
                System.out.println("rejected as expected: " + e.getMessage());
            }
        }
    }
}
