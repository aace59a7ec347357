package io.rdma4j.collectives.scenario;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Test inputs and an independent reference: every rank's input element is a deterministic small
 * integer (so that every rank can compute every other rank's input, and so that sums and
 * products are exact in every data type, bf16 included); the reference folds them in double
 * precision with obvious loops and converts once. Nothing here calls the library's kernels.
 */
public final class Values {
    private Values() {
    }

    static long mix(long x) {
        x ^= x >>> 33;
        x *= 0xff51afd7ed558ccdL;
        x ^= x >>> 33;
        x *= 0xc4ceb9fe1a85ec53L;
        x ^= x >>> 33;
        return x;
    }

    /** Input of {@code rank} at element {@code i} of case {@code caseId}: exact in every type. */
    public static double input(int rank, int caseId, long i, DataType t, ReduceOp op) {
        long h = mix(rank * 0x9E3779B97F4A7C15L + caseId * 0xBF58476D1CE4E5B9L + i * 0x94D049BB133111EBL);
        int u = (int) ((h >>> 1) % 1000);
        boolean unsigned = t == DataType.U8;
        if (op == null || op == ReduceOp.SUM || op == ReduceOp.AVG) {
            return unsigned ? u % 9 : (u % 17) - 8;
        }
        if (op == ReduceOp.PROD) {
            int k = u % 5;
            if (unsigned) {
                return k < 3 ? 1 : 2;
            }
            return k < 2 ? 1 : k == 2 ? 2 : k == 3 ? -1 : 1;
        }
        return unsigned ? u % 201 : (u % 201) - 100;
    }

    /** The reduction of everyone's inputs at {@code i}, as stored in type {@code t}. */
    public static double reference(int size, int caseId, long i, DataType t, ReduceOp op, IndexMap map) {
        double acc = 0;
        for (int r = 0; r < size; r++) {
            double v = input(r, caseId, map.index(r, i), t, op);
            if (r == 0) {
                acc = v;
                continue;
            }
            acc = switch (op) {
                case SUM, AVG -> acc + v;
                case PROD -> acc * v;
                case MIN -> Math.min(acc, v);
                case MAX -> Math.max(acc, v);
            };
        }
        if (t == DataType.U8 && (op == ReduceOp.SUM || op == ReduceOp.AVG || op == ReduceOp.PROD)) {
            acc = ((long) acc) & 0xFF;
        }
        if (op == ReduceOp.AVG) {
            if (t.isFloatingPoint()) {
                acc = acc / size;
            } else {
                acc = (long) acc / size; // truncating integer division
            }
        }
        return acc;
    }

    /** Which input index of rank r contributes to output element i. */
    @FunctionalInterface
    public interface IndexMap {
        long index(int rank, long i);
    }

    public static void write(MemorySegment s, long idx, DataType t, double v) {
        switch (t) {
            case F32 -> s.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, idx, (float) v);
            case F64 -> s.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, idx, v);
            case BF16 -> s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, idx,
                    (short) (Float.floatToIntBits((float) v) >>> 16)); // exact: inputs are small integers
            case F16 -> s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, idx, Float.floatToFloat16((float) v));
            case I32 -> s.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, idx, (int) v);
            case I64 -> s.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, idx, (long) v);
            case U8 -> s.set(ValueLayout.JAVA_BYTE, idx, (byte) (long) v);
        }
    }

    public static double read(MemorySegment s, long idx, DataType t) {
        return switch (t) {
            case F32 -> s.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, idx);
            case F64 -> s.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, idx);
            case BF16 -> Float.intBitsToFloat((s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, idx) & 0xFFFF) << 16);
            case F16 -> Float.float16ToFloat(s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, idx));
            case I32 -> s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, idx);
            case I64 -> s.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, idx);
            case U8 -> s.get(ValueLayout.JAVA_BYTE, idx) & 0xFF;
        };
    }

    /**
     * Whether {@code got}, an allreduce's (or reduce's, reduce-scatter's) result over {@code n}
     * ranks, equals the reference within what the type's rounding allows: exact but for AVG of
     * a floating type, whose division rounds once. fp16's average divides each input first
     * (ReduceOp.AVG): each of the n quotients rounds by at most half an fp16 ulp of the largest
     * input over n (8 / n), each of the n - 1 partial sums by at most half one of 8.
     */
    public static boolean close(double got, double want, DataType t, ReduceOp op, int n) {
        if (t == DataType.F16 && op == ReduceOp.AVG) {
            return Math.abs(got - want) <= n * halfUlpOfHalf(8.0 / n) + (n - 1) * halfUlpOfHalf(8);
        }
        return close(got, want, t, op);
    }

    /** Half the distance between {@code v} (a normal fp16 value) and the next fp16 value up. */
    private static double halfUlpOfHalf(double v) {
        return Math.ulp((float) v) * 4096; // fp16 keeps 10 of fp32's 23 fraction bits
    }

    /** Whether {@code got} equals the reference within what the type's final rounding allows. */
    public static boolean close(double got, double want, DataType t, ReduceOp op) {
        if (op != ReduceOp.AVG || !t.isFloatingPoint()) {
            return got == want;
        }
        double ulp = switch (t) {
            case F32 -> Math.ulp((float) want);
            case F64 -> Math.ulp(want);
            case BF16 -> Math.ulp((float) want) * 65536;
            case F16 -> Math.max(Math.ulp((float) want) * 8192, 6e-8);
            default -> 0;
        };
        return Math.abs(got - want) <= ulp;
    }
}
