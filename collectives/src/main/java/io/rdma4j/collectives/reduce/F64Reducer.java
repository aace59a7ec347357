package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** fp64 kernels; one counted loop per operator so that each stays a simple, JIT-friendly loop. */
final class F64Reducer extends ArithmeticReducer {
    private static final ValueLayout.OfDouble F = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    F64Reducer(ReduceOp op, KernelLoops loops) {
        super(DataType.F64, op, loops);
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
    long vectorsDivided(MemorySegment d, long off, long n, int contributors) {
        return VectorKernels.f64Divided(d, off, n, contributors);
    }

    @Override
    void divide(MemorySegment d, long off, long from, long n, int contributors) {
        double div = contributors;
        for (long i = from; i < n; i++) {
            long o = off + (i << 3);
            d.set(F, o, d.get(F, o) / div);
        }
    }

    @Override
    void stagedBlock(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, int m) {
        Blocks k = Blocks.wide();
        MemorySegment.copy(a, F, aOff, k.xd, 0, m);
        MemorySegment.copy(b, F, bOff, k.yd, 0, m);
        ArrayLoops.combine(op, k.xd, k.yd, m);
        MemorySegment.copy(k.xd, 0, d, F, dOff, m);
    }

    @Override
    void stagedDivide(MemorySegment d, long off, int m, int contributors) {
        Blocks k = Blocks.wide();
        MemorySegment.copy(d, F, off, k.xd, 0, m);
        ArrayLoops.divide(k.xd, contributors, m);
        MemorySegment.copy(k.xd, 0, d, F, off, m);
    }
}
