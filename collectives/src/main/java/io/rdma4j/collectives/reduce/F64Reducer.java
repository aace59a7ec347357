package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** fp64 kernels; one counted loop per operator so that each stays a simple, JIT-friendly loop. */
final class F64Reducer extends AbstractReducer {
    private static final ValueLayout.OfDouble F = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    private final boolean simd;

    F64Reducer(ReduceOp op, boolean simd) {
        super(DataType.F64, op);
        this.simd = simd;
    }

    @Override
    public void reduceInto(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        long from = simd ? VectorKernels.f64(op, d, dOff, a, aOff, b, bOff, n) : 0;
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
            long o = i << 3;
            d.set(F, dOff + o, a.get(F, aOff + o) + b.get(F, bOff + o));
        }
    }

    /** Elements {@code from..n} (the SIMD part did the ones before). */
    private static void prod(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n,
            long from) {
        for (long i = from; i < n; i++) {
            long o = i << 3;
            d.set(F, dOff + o, a.get(F, aOff + o) * b.get(F, bOff + o));
        }
    }

    /** Elements {@code from..n} (the SIMD part did the ones before). */
    private static void min(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n,
            long from) {
        for (long i = from; i < n; i++) {
            long o = i << 3;
            d.set(F, dOff + o, Math.min(a.get(F, aOff + o), b.get(F, bOff + o)));
        }
    }

    /** Elements {@code from..n} (the SIMD part did the ones before). */
    private static void max(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n,
            long from) {
        for (long i = from; i < n; i++) {
            long o = i << 3;
            d.set(F, dOff + o, Math.max(a.get(F, aOff + o), b.get(F, bOff + o)));
        }
    }

    @Override
    public void finish(MemorySegment d, long off, long n, int contributors) {
        if (op != ReduceOp.AVG) {
            return;
        }
        checkContributors(contributors);
        double div = contributors;
        for (long i = 0; i < n; i++) {
            long o = off + (i << 3);
            d.set(F, o, d.get(F, o) / div);
        }
    }
}
