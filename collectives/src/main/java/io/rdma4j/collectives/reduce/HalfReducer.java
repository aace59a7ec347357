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

    HalfReducer(DataType type, ReduceOp op) {
        super(type, op);
        this.bf16 = type == DataType.BF16;
    }

    @Override
    public void reduceInto(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        int code = op == ReduceOp.AVG ? ReduceOp.SUM.code() : op.code();
        if (bf16) {
            bf16Loop(code, d, dOff, a, aOff, b, bOff, n);
        } else {
            f16Loop(code, d, dOff, a, aOff, b, bOff, n);
        }
    }

    // The switch on the loop-invariant operator is unswitched by the JIT; one loop per format
    // keeps the conversion calls monomorphic.
    private static void bf16Loop(int code, MemorySegment d, long dOff, MemorySegment a, long aOff,
                                 MemorySegment b, long bOff, long n) {
        for (long i = 0; i < n; i++) {
            long o = i << 1;
            float x = Bf16.toFloat(a.get(S, aOff + o));
            float y = Bf16.toFloat(b.get(S, bOff + o));
            d.set(S, dOff + o, Bf16.fromFloat(combine(code, x, y)));
        }
    }

    private static void f16Loop(int code, MemorySegment d, long dOff, MemorySegment a, long aOff,
                                MemorySegment b, long bOff, long n) {
        for (long i = 0; i < n; i++) {
            long o = i << 1;
            float x = Float.float16ToFloat(a.get(S, aOff + o));
            float y = Float.float16ToFloat(b.get(S, bOff + o));
            d.set(S, dOff + o, Float.floatToFloat16(combine(code, x, y)));
        }
    }

    private static float combine(int code, float x, float y) {
        return switch (code) {
            case 0 -> x + y;
            case 1 -> x * y;
            case 2 -> Math.min(x, y);
            default -> Math.max(x, y);
        };
    }

    @Override
    public void finish(MemorySegment d, long off, long n, int contributors) {
        if (op != ReduceOp.AVG) {
            return;
        }
        checkContributors(contributors);
        float div = contributors;
        for (long i = 0; i < n; i++) {
            long o = off + (i << 1);
            short v = d.get(S, o);
            d.set(S, o, bf16 ? Bf16.fromFloat(Bf16.toFloat(v) / div)
                    : Float.floatToFloat16(Float.float16ToFloat(v) / div));
        }
    }
}
