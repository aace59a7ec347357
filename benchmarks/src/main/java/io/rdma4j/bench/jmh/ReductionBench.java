package io.rdma4j.bench.jmh;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.collectives.reduce.Reducer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * The allreduce's reduction kernels ({@code dst[i] += src[i]}) per data type, at a cache-resident
 * (64 KiB) and a memory-bound (16 MiB) size, against two baselines on the same bytes: a plain
 * Java loop over float[] (what a naive kernel would do) and {@link MemorySegment#copy} (memcpy:
 * the memory bandwidth a streaming kernel cannot beat by much). Read the "bytes" line in ops/s
 * as payload bytes (one operand) per second.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector"})
public class ReductionBench {

    /** Two off-heap operands of {@code bytes}, filled with small normal values of every type (0x3C bytes). */
    @State(Scope.Thread)
    public static class Operands {
        @Param({"65536", "16777216"})
        public int bytes;

        Arena arena;
        MemorySegment dst;
        MemorySegment src;

        @Setup(Level.Trial)
        public void allocate() {
            arena = Arena.ofConfined();
            dst = arena.allocate(bytes, 64);
            src = arena.allocate(bytes, 64);
            dst.fill((byte) 0x3C);
            src.fill((byte) 0x3C);
        }

        @TearDown(Level.Trial)
        public void free() {
            arena.close();
        }
    }

    @State(Scope.Thread)
    public static class Kernel {
        @Param({"F32", "F64", "BF16", "F16", "I32", "I64", "U8"})
        public String type;

        Reducer sum;
        int elementSize;

        @Setup(Level.Trial)
        public void pick() {
            DataType t = DataType.valueOf(type);
            sum = Reducer.of(t, ReduceOp.SUM);
            elementSize = t.byteSize();
        }
    }

    @State(Scope.Thread)
    public static class HeapFloats {
        float[] a;
        float[] b;

        @Setup(Level.Trial)
        public void allocate(Operands o) {
            a = new float[o.bytes / 4];
            b = new float[o.bytes / 4];
            Arrays.fill(a, 1f);
            Arrays.fill(b, 1e-3f);
        }
    }

    @Benchmark
    public void reducerSum(Operands o, Kernel k, ByteCounter c) {
        k.sum.reduce(o.dst, o.src, o.bytes / k.elementSize);
        c.bytes += o.bytes;
    }

    /** Baseline: the obvious float loop on heap arrays. */
    @Benchmark
    public void plainFloatLoop(Operands o, HeapFloats h, ByteCounter c) {
        float[] a = h.a;
        float[] b = h.b;
        for (int i = 0; i < a.length; i++) {
            a[i] += b[i];
        }
        c.bytes += o.bytes;
    }

    /** Baseline: memcpy of the same bytes. */
    @Benchmark
    public void memcpy(Operands o, ByteCounter c) {
        MemorySegment.copy(o.src, 0, o.dst, 0, o.bytes);
        c.bytes += o.bytes;
    }
}
