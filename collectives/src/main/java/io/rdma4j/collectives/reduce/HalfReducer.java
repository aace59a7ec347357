package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * bf16 and fp16 kernels: both operands widen to fp32, combine in fp32, and the result rounds
 * to the storage type (round-to-nearest-even) after every step. fp16 uses the JDK's
 * {@link Float#float16ToFloat}/{@link Float#floatToFloat16} (intrinsified on x86 with F16C).
 */
final class HalfReducer extends AbstractReducer {
    private static final ValueLayout.OfShort S = ValueLayout.JAVA_SHORT_UNALIGNED;

    private final boolean bf16;
    /** Whether AVG's division goes through blocks (see {@link #finish}). */
    private final boolean divideInBlocks;

    HalfReducer(DataType type, ReduceOp op, KernelLoops loops) {
        super(type, op);
        this.bf16 = type == DataType.BF16;
        this.divideInBlocks = bf16 || loops == KernelLoops.STAGED;
    }

    @Override
    public void reduceInto(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        Blocks k = Blocks.current();
        for (long done = 0; done < n; done += Blocks.BLOCK) {
            int m = (int) Math.min(Blocks.BLOCK, n - done);
            long o = done << 1;
            // both operands are read before the block of d is written: d may be a or b (in place)
            MemorySegment.copy(a, S, aOff + o, k.x, 0, m);
            MemorySegment.copy(b, S, bOff + o, k.y, 0, m);
            if (bf16) {
                bf16Block(k, m);
            } else {
                f16Block(k, m);
            }
            MemorySegment.copy(k.x, 0, d, S, dOff + o, m);
        }
    }

    /** x = f16(x OP y) over the first m elements of the block. */
    private void f16Block(Blocks k, int m) {
        // one straight-line counted loop per operator (as the fp32 kernels): an operator switch
        // inside the loop keeps C2 from vectorizing it
        switch (op) {
            case SUM, AVG -> f16Sum(k.x, k.y, m);
            case PROD -> f16Prod(k.x, k.y, m);
            case MIN -> f16Min(k.x, k.y, m);
            case MAX -> f16Max(k.x, k.y, m);
        }
    }

    /** x = bf16(x OP y): widen to int bits, reinterpret as floats, combine, reinterpret back, round. */
    private void bf16Block(Blocks k, int m) {
        widen(k.x, k.xi, m);
        widen(k.y, k.yi, m);
        long bytes = (long) m << 2;
        MemorySegment.copy(k.xiView, 0, k.xfView, 0, bytes);
        MemorySegment.copy(k.yiView, 0, k.yfView, 0, bytes);
        ArrayLoops.combine(op, k.xf, k.yf, m);
        MemorySegment.copy(k.xfView, 0, k.xiView, 0, bytes);
        narrow(k.xi, k.x, m);
    }

    /** bf16 bits to fp32 bits: exact, the bf16 is the upper half. */
    private static void widen(short[] from, int[] to, int m) {
        for (int i = 0; i < m; i++) {
            to[i] = (from[i] & 0xFFFF) << 16;
        }
    }

    /**
     * fp32 bits to bf16 with {@link Bf16#fromBits}'s rounding, in integer arithmetic only; in two
     * passes, because C2 does not vectorize a loop that stores a right-shifted int as a short.
     */
    private static void narrow(int[] bits, short[] to, int m) {
        for (int i = 0; i < m; i++) {
            bits[i] = Bf16.roundBits(bits[i]);
        }
        for (int i = 0; i < m; i++) {
            to[i] = (short) bits[i];
        }
    }

    private static void f16Sum(short[] xs, short[] ys, int m) {
        for (int i = 0; i < m; i++) {
            float x = Float.float16ToFloat(xs[i]);
            float y = Float.float16ToFloat(ys[i]);
            xs[i] = Float.floatToFloat16(x + y);
        }
    }

    private static void f16Prod(short[] xs, short[] ys, int m) {
        for (int i = 0; i < m; i++) {
            float x = Float.float16ToFloat(xs[i]);
            float y = Float.float16ToFloat(ys[i]);
            xs[i] = Float.floatToFloat16(x * y);
        }
    }

    private static void f16Min(short[] xs, short[] ys, int m) {
        for (int i = 0; i < m; i++) {
            float x = Float.float16ToFloat(xs[i]);
            float y = Float.float16ToFloat(ys[i]);
            xs[i] = Float.floatToFloat16(Math.min(x, y));
        }
    }

    private static void f16Max(short[] xs, short[] ys, int m) {
        for (int i = 0; i < m; i++) {
            float x = Float.float16ToFloat(xs[i]);
            float y = Float.float16ToFloat(ys[i]);
            xs[i] = Float.floatToFloat16(Math.max(x, y));
        }
    }

    /**
     * AVG's division, through blocks as {@link #reduceInto} combines, except fp16 on a JVM with C2,
     * which compiles the per-element loop's conversions to F16C instructions. 1M elements over 3
     * contributors on a 2-core EPYC host, per element / through blocks: bf16 with C2 1.9-3.2 /
     * 0.95-1.34 ms, with C1 only 14-23 / 5.9-9.3 ms; fp16 with C2 0.11 / 0.32 ms, with C1 only
     * 10-18 / 1.2-2.0 ms. To measure again: time {@code finish} of such a vector in a JVM with and
     * without {@code -XX:TieredStopAtLevel=1}.
     */
    @Override
    public void finish(MemorySegment d, long off, long n, int contributors) {
        if (op != ReduceOp.AVG) {
            return;
        }
        checkContributors(contributors);
        if (!divideInBlocks) {
            float div = contributors;
            for (long i = 0; i < n; i++) {
                long o = off + (i << 1);
                short v = d.get(S, o);
                d.set(S, o, Float.floatToFloat16(Float.float16ToFloat(v) / div));
            }
            return;
        }
        Blocks k = Blocks.current();
        for (long done = 0; done < n; done += Blocks.BLOCK) {
            int m = (int) Math.min(Blocks.BLOCK, n - done);
            long o = off + (done << 1);
            MemorySegment.copy(d, S, o, k.x, 0, m);
            if (bf16) {
                widen(k.x, k.xi, m);
                long bytes = (long) m << 2;
                MemorySegment.copy(k.xiView, 0, k.xfView, 0, bytes);
                ArrayLoops.divide(k.xf, contributors, m);
                MemorySegment.copy(k.xfView, 0, k.xiView, 0, bytes);
                narrow(k.xi, k.x, m);
            } else {
                f16Divide(k.x, contributors, m);
            }
            MemorySegment.copy(k.x, 0, d, S, o, m);
        }
    }

    private static void f16Divide(short[] xs, int n, int m) {
        float div = n;
        for (int i = 0; i < m; i++) {
            xs[i] = Float.floatToFloat16(Float.float16ToFloat(xs[i]) / div);
        }
    }
}
