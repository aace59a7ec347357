package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.ReduceOp;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * SIMD bodies of the fp32/fp64/int32/int64 kernels, written with the incubating Vector API
 * ({@code jdk.incubator.vector}). C2 does not vectorize the scalar loops over two or three native
 * segments (it cannot rule out that they alias), so they run at 1-2 elements per cycle; these run
 * at the machine's vector width (measured in {@code ReductionBench}). Each method handles the
 * largest whole number of vectors and returns how many elements it did; the scalar kernel
 * finishes the tail. Lane-wise add/mul/min/max are the same IEEE / two's-complement operations
 * as the scalar code ({@code min}/{@code max} as {@link Math#min}), so results are bit-identical
 * whichever path ran.
 *
 * <p><b>Shape, and why.</b> The Vector API is fast only where C2 intrinsifies it, which needs the
 * species and the operation to be constants in the compiled loop and the whole chain of
 * {@code fromMemorySegment}/{@code add}/{@code intoMemorySegment} inlined. Hence one loop per
 * operator with the operation spelled out (an operator passed as a parameter leaves the loop
 * boxed, ~20x slower than scalar code), and one method per type holding all four loops, which
 * makes it larger than C2's {@code FreqInlineSize} (325 bytecodes): C2 then compiles it on its
 * own instead of inlining it into a big caller, where the inlining budget ran out and the loop
 * stayed boxed (measured: 2-rank allreduce of 1 MiB at 500 us instead of 70 us; fast again with
 * {@code -XX:CompileCommand=dontinline} on this class).
 *
 * <p>Only {@link Simd} decides whether this class is used, and it is loaded only when the module
 * is in the boot layer ({@code --add-modules jdk.incubator.vector}).
 */
final class VectorKernels {
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    private static final VectorSpecies<Float> F32 = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Double> F64 = DoubleVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> I32 = IntVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Long> I64 = LongVector.SPECIES_PREFERRED;

    private VectorKernels() {
    }

    /** {@code d = a OP b} for the whole vectors among {@code n} F32 elements; returns how many elements that was. */
    static long f32(ReduceOp op, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        long end = F32.loopBound(n) << 2;
        long step = F32.vectorByteSize();
        switch (op) {
            case SUM, AVG -> {
                for (long o = 0; o < end; o += step) {
                    FloatVector.fromMemorySegment(F32, a, aOff + o, LE).add(FloatVector.fromMemorySegment(F32, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
            case PROD -> {
                for (long o = 0; o < end; o += step) {
                    FloatVector.fromMemorySegment(F32, a, aOff + o, LE).mul(FloatVector.fromMemorySegment(F32, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
            case MIN -> {
                for (long o = 0; o < end; o += step) {
                    FloatVector.fromMemorySegment(F32, a, aOff + o, LE).min(FloatVector.fromMemorySegment(F32, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
            case MAX -> {
                for (long o = 0; o < end; o += step) {
                    FloatVector.fromMemorySegment(F32, a, aOff + o, LE).max(FloatVector.fromMemorySegment(F32, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
        }
        return end >>> 2;
    }

    /** {@code d = a OP b} for the whole vectors among {@code n} F64 elements; returns how many elements that was. */
    static long f64(ReduceOp op, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        long end = F64.loopBound(n) << 3;
        long step = F64.vectorByteSize();
        switch (op) {
            case SUM, AVG -> {
                for (long o = 0; o < end; o += step) {
                    DoubleVector.fromMemorySegment(F64, a, aOff + o, LE).add(DoubleVector.fromMemorySegment(F64, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
            case PROD -> {
                for (long o = 0; o < end; o += step) {
                    DoubleVector.fromMemorySegment(F64, a, aOff + o, LE).mul(DoubleVector.fromMemorySegment(F64, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
            case MIN -> {
                for (long o = 0; o < end; o += step) {
                    DoubleVector.fromMemorySegment(F64, a, aOff + o, LE).min(DoubleVector.fromMemorySegment(F64, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
            case MAX -> {
                for (long o = 0; o < end; o += step) {
                    DoubleVector.fromMemorySegment(F64, a, aOff + o, LE).max(DoubleVector.fromMemorySegment(F64, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
        }
        return end >>> 3;
    }

    /** {@code d = a OP b} for the whole vectors among {@code n} I32 elements; returns how many elements that was. */
    static long i32(ReduceOp op, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        long end = I32.loopBound(n) << 2;
        long step = I32.vectorByteSize();
        switch (op) {
            case SUM, AVG -> {
                for (long o = 0; o < end; o += step) {
                    IntVector.fromMemorySegment(I32, a, aOff + o, LE).add(IntVector.fromMemorySegment(I32, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
            case PROD -> {
                for (long o = 0; o < end; o += step) {
                    IntVector.fromMemorySegment(I32, a, aOff + o, LE).mul(IntVector.fromMemorySegment(I32, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
            case MIN -> {
                for (long o = 0; o < end; o += step) {
                    IntVector.fromMemorySegment(I32, a, aOff + o, LE).min(IntVector.fromMemorySegment(I32, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
            case MAX -> {
                for (long o = 0; o < end; o += step) {
                    IntVector.fromMemorySegment(I32, a, aOff + o, LE).max(IntVector.fromMemorySegment(I32, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
        }
        return end >>> 2;
    }

    /** {@code d = a OP b} for the whole vectors among {@code n} I64 elements; returns how many elements that was. */
    static long i64(ReduceOp op, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        long end = I64.loopBound(n) << 3;
        long step = I64.vectorByteSize();
        switch (op) {
            case SUM, AVG -> {
                for (long o = 0; o < end; o += step) {
                    LongVector.fromMemorySegment(I64, a, aOff + o, LE).add(LongVector.fromMemorySegment(I64, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
            case PROD -> {
                for (long o = 0; o < end; o += step) {
                    LongVector.fromMemorySegment(I64, a, aOff + o, LE).mul(LongVector.fromMemorySegment(I64, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
            case MIN -> {
                for (long o = 0; o < end; o += step) {
                    LongVector.fromMemorySegment(I64, a, aOff + o, LE).min(LongVector.fromMemorySegment(I64, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
            case MAX -> {
                for (long o = 0; o < end; o += step) {
                    LongVector.fromMemorySegment(I64, a, aOff + o, LE).max(LongVector.fromMemorySegment(I64, b, bOff + o, LE))
                            .intoMemorySegment(d, dOff + o, LE);
                }
            }
        }
        return end >>> 3;
    }

    /**
     * AVG's division {@code d[i] = d[i] / contributors} for the whole vectors among {@code n} F32
     * elements; returns how many elements that was. A lane-wise division is the same correctly
     * rounded IEEE division as the scalar one, so the result is bit-identical (not a
     * multiplication by the reciprocal, which rounds differently).
     */
    static long f32Divided(MemorySegment d, long off, long n, int contributors) {
        long end = F32.loopBound(n) << 2;
        long step = F32.vectorByteSize();
        float div = contributors;
        for (long o = 0; o < end; o += step) {
            FloatVector.fromMemorySegment(F32, d, off + o, LE).div(div).intoMemorySegment(d, off + o, LE);
        }
        return end >>> 2;
    }

    /** {@link #f32Divided} for F64 elements. */
    static long f64Divided(MemorySegment d, long off, long n, int contributors) {
        long end = F64.loopBound(n) << 3;
        long step = F64.vectorByteSize();
        double div = contributors;
        for (long o = 0; o < end; o += step) {
            DoubleVector.fromMemorySegment(F64, d, off + o, LE).div(div).intoMemorySegment(d, off + o, LE);
        }
        return end >>> 3;
    }
}
