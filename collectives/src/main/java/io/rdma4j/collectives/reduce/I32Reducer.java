package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** int32 kernels: wrapping two's-complement arithmetic; AVG truncates toward zero. */
final class I32Reducer extends AbstractReducer {
    private static final ValueLayout.OfInt I = ValueLayout.JAVA_INT_UNALIGNED;

    private final boolean simd;

    I32Reducer(ReduceOp op, boolean simd) {
        super(DataType.I32, op);
        this.simd = simd;
    }

    @Override
    public void reduceInto(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        long from = simd ? VectorKernels.i32(op, d, dOff, a, aOff, b, bOff, n) : 0;
        switch (op) {
            case SUM, AVG -> sum(d, dOff, a, aOff, b, bOff, n, from);
            case PROD -> prod(d, dOff, a, aOff, b, bOff, n, from);
            case MIN -> min(d, dOff, a, aOff, b, bOff, n, from);
            case MAX -> max(d, dOff, a, aOff, b, bOff, n, from);
        }
    }

    /** Elements {@code from..n} (the SIMD part did the ones before). */
    private static void sum(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n,
            long from) {
        for (long i = from; i < n; i++) {
            long o = i << 2;
            d.set(I, dOff + o, a.get(I, aOff + o) + b.get(I, bOff + o));
        }
    }

    /** Elements {@code from..n} (the SIMD part did the ones before). */
    private static void prod(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n,
            long from) {
        for (long i = from; i < n; i++) {
            long o = i << 2;
            d.set(I, dOff + o, a.get(I, aOff + o) * b.get(I, bOff + o));
        }
    }

    /** Elements {@code from..n} (the SIMD part did the ones before). */
    private static void min(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n,
            long from) {
        for (long i = from; i < n; i++) {
            long o = i << 2;
            d.set(I, dOff + o, Math.min(a.get(I, aOff + o), b.get(I, bOff + o)));
        }
    }

    /** Elements {@code from..n} (the SIMD part did the ones before). */
    private static void max(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n,
            long from) {
        for (long i = from; i < n; i++) {
            long o = i << 2;
            d.set(I, dOff + o, Math.max(a.get(I, aOff + o), b.get(I, bOff + o)));
        }
    }

    @Override
    public void finish(MemorySegment d, long off, long n, int contributors) {
        if (op != ReduceOp.AVG) {
            return;
        }
        checkContributors(contributors);
        for (long i = 0; i < n; i++) {
            long o = off + (i << 2);
            d.set(I, o, d.get(I, o) / contributors);
        }
    }
}
