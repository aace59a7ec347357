package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** fp64 kernels; one counted loop per operator so that each stays a simple, JIT-friendly loop. */
final class F64Reducer extends ArithmeticReducer {
    private static final ValueLayout.OfDouble F = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    F64Reducer(ReduceOp op, boolean simd) {
        super(DataType.F64, op, simd);
    }

    @Override
    long vectors(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        return VectorKernels.f64(op, d, dOff, a, aOff, b, bOff, n);
    }

    @Override
    void sum(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 3;
            d.set(F, dOff + o, a.get(F, aOff + o) + b.get(F, bOff + o));
        }
    }

    @Override
    void prod(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 3;
            d.set(F, dOff + o, a.get(F, aOff + o) * b.get(F, bOff + o));
        }
    }

    @Override
    void min(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 3;
            d.set(F, dOff + o, Math.min(a.get(F, aOff + o), b.get(F, bOff + o)));
        }
    }

    @Override
    void max(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
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
