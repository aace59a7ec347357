package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** int64 kernels: wrapping two's-complement arithmetic; AVG truncates toward zero. */
final class I64Reducer extends ArithmeticReducer {
    private static final ValueLayout.OfLong I = ValueLayout.JAVA_LONG_UNALIGNED;

    I64Reducer(ReduceOp op, KernelLoops loops) {
        super(DataType.I64, op, loops);
    }

    @Override
    long vectors(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        return VectorKernels.i64(op, d, dOff, a, aOff, b, bOff, n);
    }

    @Override
    void sum(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 3;
            d.set(I, dOff + o, a.get(I, aOff + o) + b.get(I, bOff + o));
        }
    }

    @Override
    void prod(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 3;
            d.set(I, dOff + o, a.get(I, aOff + o) * b.get(I, bOff + o));
        }
    }

    @Override
    void min(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 3;
            d.set(I, dOff + o, Math.min(a.get(I, aOff + o), b.get(I, bOff + o)));
        }
    }

    @Override
    void max(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 3;
            d.set(I, dOff + o, Math.max(a.get(I, aOff + o), b.get(I, bOff + o)));
        }
    }

    @Override
    void divide(MemorySegment d, long off, long from, long n, int contributors) {
        for (long i = from; i < n; i++) {
            long o = off + (i << 3);
            d.set(I, o, d.get(I, o) / contributors);
        }
    }

    @Override
    void stagedBlock(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, int m) {
        Blocks k = Blocks.wide();
        MemorySegment.copy(a, I, aOff, k.xl, 0, m);
        MemorySegment.copy(b, I, bOff, k.yl, 0, m);
        ArrayLoops.combine(op, k.xl, k.yl, m);
        MemorySegment.copy(k.xl, 0, d, I, dOff, m);
    }

    @Override
    void stagedDivide(MemorySegment d, long off, int m, int contributors) {
        Blocks k = Blocks.wide();
        MemorySegment.copy(d, I, off, k.xl, 0, m);
        ArrayLoops.divide(k.xl, contributors, m);
        MemorySegment.copy(k.xl, 0, d, I, off, m);
    }
}
