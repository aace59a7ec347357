package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** int32 kernels: wrapping two's-complement arithmetic; AVG truncates toward zero. */
final class I32Reducer extends ArithmeticReducer {
    private static final ValueLayout.OfInt I = ValueLayout.JAVA_INT_UNALIGNED;

    I32Reducer(ReduceOp op, KernelLoops loops) {
        super(DataType.I32, op, loops);
    }

    @Override
    long vectors(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        return VectorKernels.i32(op, d, dOff, a, aOff, b, bOff, n);
    }

    @Override
    void sum(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 2;
            d.set(I, dOff + o, a.get(I, aOff + o) + b.get(I, bOff + o));
        }
    }

    @Override
    void prod(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 2;
            d.set(I, dOff + o, a.get(I, aOff + o) * b.get(I, bOff + o));
        }
    }

    @Override
    void min(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 2;
            d.set(I, dOff + o, Math.min(a.get(I, aOff + o), b.get(I, bOff + o)));
        }
    }

    @Override
    void max(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n) {
        for (long i = from; i < n; i++) {
            long o = i << 2;
            d.set(I, dOff + o, Math.max(a.get(I, aOff + o), b.get(I, bOff + o)));
        }
    }

    @Override
    void divide(MemorySegment d, long off, long from, long n, int contributors) {
        for (long i = from; i < n; i++) {
            long o = off + (i << 2);
            d.set(I, o, d.get(I, o) / contributors);
        }
    }

    @Override
    void stagedBlock(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, int m) {
        Blocks k = Blocks.current();
        MemorySegment.copy(a, I, aOff, k.xi, 0, m);
        MemorySegment.copy(b, I, bOff, k.yi, 0, m);
        ArrayLoops.combine(op, k.xi, k.yi, m);
        MemorySegment.copy(k.xi, 0, d, I, dOff, m);
    }

    @Override
    void stagedDivide(MemorySegment d, long off, int m, int contributors) {
        Blocks k = Blocks.current();
        MemorySegment.copy(d, I, off, k.xi, 0, m);
        ArrayLoops.divide(k.xi, contributors, m);
        MemorySegment.copy(k.xi, 0, d, I, off, m);
    }
}
