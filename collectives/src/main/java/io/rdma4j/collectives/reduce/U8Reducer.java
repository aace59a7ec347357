package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Unsigned 8-bit kernels: SUM/PROD wrap modulo 256, MIN/MAX and AVG treat bytes as 0..255. */
final class U8Reducer extends AbstractReducer {
    private static final ValueLayout.OfByte B = ValueLayout.JAVA_BYTE;

    U8Reducer(ReduceOp op) {
        super(DataType.U8, op);
    }

    @Override
    public void reduceInto(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        switch (op) {
            case SUM, AVG -> sum(d, dOff, a, aOff, b, bOff, n);
            case PROD -> prod(d, dOff, a, aOff, b, bOff, n);
            case MIN -> min(d, dOff, a, aOff, b, bOff, n);
            case MAX -> max(d, dOff, a, aOff, b, bOff, n);
        }
    }

    private static void sum(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        for (long i = 0; i < n; i++) {
            d.set(B, dOff + i, (byte) (a.get(B, aOff + i) + b.get(B, bOff + i)));
        }
    }

    private static void prod(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        for (long i = 0; i < n; i++) {
            d.set(B, dOff + i, (byte) (a.get(B, aOff + i) * b.get(B, bOff + i)));
        }
    }

    private static void min(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        for (long i = 0; i < n; i++) {
            d.set(B, dOff + i, (byte) Math.min(a.get(B, aOff + i) & 0xFF, b.get(B, bOff + i) & 0xFF));
        }
    }

    private static void max(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        for (long i = 0; i < n; i++) {
            d.set(B, dOff + i, (byte) Math.max(a.get(B, aOff + i) & 0xFF, b.get(B, bOff + i) & 0xFF));
        }
    }

    @Override
    public void finish(MemorySegment d, long off, long n, int contributors) {
        if (op != ReduceOp.AVG) {
            return;
        }
        checkContributors(contributors);
        for (long i = 0; i < n; i++) {
            d.set(B, off + i, (byte) ((d.get(B, off + i) & 0xFF) / contributors));
        }
    }
}
