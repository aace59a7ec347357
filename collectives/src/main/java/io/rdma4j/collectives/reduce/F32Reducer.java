package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** fp32 kernels; one counted loop per operator so that each stays a simple, JIT-friendly loop. */
final class F32Reducer extends ArithmeticReducer {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    F32Reducer(ReduceOp op, KernelLoops loops) {
        super(DataType.F32, op, loops);
    }

    @Override
    long vectors(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        return VectorKernels.f32(op, d, dOff, a, aOff, b, bOff, n);
    }

    @Override
    void sum(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 2;
            d.set(F, dOff + o, a.get(F, aOff + o) + b.get(F, bOff + o));
        }
    }

    @Override
    void prod(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 2;
            d.set(F, dOff + o, a.get(F, aOff + o) * b.get(F, bOff + o));
        }
    }

    @Override
    void min(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 2;
            d.set(F, dOff + o, Math.min(a.get(F, aOff + o), b.get(F, bOff + o)));
        }
    }

    @Override
    void max(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 2;
            d.set(F, dOff + o, Math.max(a.get(F, aOff + o), b.get(F, bOff + o)));
        }
    }

    @Override
    long vectorsDivided(MemorySegment d, long off, long n, int contributors) {
        return VectorKernels.f32Divided(d, off, n, contributors);
    }

    @Override
    void divide(MemorySegment d, long off, long from, long n, int contributors) {
        float div = contributors;
        for (long i = from; i < n; i++) {
            long o = off + (i << 2);
            d.set(F, o, d.get(F, o) / div);
        }
    }

    @Override
    void stagedBlock(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, int m) {
        Blocks k = Blocks.current();
        MemorySegment.copy(a, F, aOff, k.xf, 0, m);
        MemorySegment.copy(b, F, bOff, k.yf, 0, m);
        ArrayLoops.combine(op, k.xf, k.yf, m);
        MemorySegment.copy(k.xf, 0, d, F, dOff, m);
    }

    @Override
    void stagedDivide(MemorySegment d, long off, int m, int contributors) {
        Blocks k = Blocks.current();
        MemorySegment.copy(d, F, off, k.xf, 0, m);
        ArrayLoops.divide(k.xf, contributors, m);
        MemorySegment.copy(k.xf, 0, d, F, off, m);
    }
}
