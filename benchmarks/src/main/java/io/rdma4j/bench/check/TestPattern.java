package io.rdma4j.bench.check;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

/**
 * The data each rank contributes and the result a collective must produce, as nccl-tests'
 * check does: inputs are small integers chosen per operator so that every intermediate result
 * is exact in every data type (bf16 included, up to 40 ranks), the output varies with the
 * element index (a misplaced chunk is caught) and with every rank's identity: for any two ranks
 * r and s some element's result changes when s's contribution is missing, or is replaced by
 * r's (a swapped or duplicated block is caught too). For sum that identity is the rank's bits,
 * for product those of rank + 1, one per element index modulo {@link #RANK_BITS}. The
 * reference is computed here in double/long arithmetic, independently of the library's kernels,
 * and then stored as the data type would store it. One exception: fp16's average divides each
 * input before the sum and rounds each quotient, so it is checked within a bound
 * ({@link #matches(double, double, int)}) that tells every rank's contribution apart up to 20 ranks.
 */
public final class TestPattern {
    /**
     * Prefilled into outputs so that an element no rank wrote is caught: no input and, up to 40
     * ranks, no result has this value (sums stay at or below 240, products are powers of two,
     * min/max at or below 97), and every data type holds it exactly (u8 up to 255).
     */
    public static final double SENTINEL = 250;
    /** Rank bits that sum and product inputs carry: ranks below 2^16 - 1 are told apart. */
    static final int RANK_BITS = 16;

    private final DataType type;
    private final ReduceOp op;

    /** @param op the reduction, or null for data movement (allgather, broadcast) */
    public TestPattern(DataType type, ReduceOp op) {
        this.type = type;
        this.op = op;
    }

    public DataType type() {
        return type;
    }

    /** The reduction, or null for data movement. */
    public ReduceOp op() {
        return op;
    }

    /** What {@code rank} contributes at element {@code index}. */
    public double input(int rank, long index) {
        if (op == null) {
            return spread(rank, index);
        }
        return switch (op) {
            // index mod 5 (5 divides no power of two, so chunk shifts show) plus one bit of the
            // rank: at most 6, so 40 ranks sum to 240, exact in bf16
            case SUM, AVG -> 1 + index % 5 + rankBit(rank, index);
            // a 2 where rank + 1 has the element's bit and the rank agrees with index / 16 mod 5:
            // at most 8 of 40 ranks, a product of 256 at most. rank + 1, not the rank: rank 0's
            // bits are all 0, and a contribution of all 1s (the product's identity) could go
            // missing, or be counted twice, unseen
            case PROD -> rankBit(rank + 1, index) == 1 && (index / RANK_BITS) % 5 == rank % 5 ? 2 : 1;
            case MIN, MAX -> spread(rank, index);
        };
    }

    private static int rankBit(int rank, long index) {
        return (rank >>> (int) (index % RANK_BITS)) & 1;
    }

    private static double spread(int rank, long index) {
        return (index * 7 + rank * 13L) % 97 + 1;
    }

    /** The reduction of all {@code ranks}' inputs at {@code index}, as stored in the data type. */
    public double reduced(int ranks, long index) {
        if (op == null) {
            throw new IllegalStateException("no reduction for a data-movement pattern");
        }
        if (type.isFloatingPoint()) {
            double acc = input(0, index);
            for (int r = 1; r < ranks; r++) {
                acc = combine(acc, input(r, index));
            }
            return ElementCodec.quantize(type, op == ReduceOp.AVG ? acc / ranks : acc);
        }
        // integer types wrap, so compute modulo 2^64 and let quantize wrap to the type's width
        long acc = (long) input(0, index);
        for (int r = 1; r < ranks; r++) {
            long v = (long) input(r, index);
            acc = switch (op) {
                case SUM, AVG -> acc + v;
                case PROD -> acc * v;
                case MIN -> Math.min(acc, v);
                case MAX -> Math.max(acc, v);
            };
        }
        if (op == ReduceOp.AVG) {
            acc = (long) ElementCodec.quantize(type, acc) / ranks;
        }
        return ElementCodec.quantize(type, acc);
    }

    private double combine(double a, double b) {
        return switch (op) {
            case SUM, AVG -> a + b;
            case PROD -> a * b;
            case MIN -> Math.min(a, b);
            case MAX -> Math.max(a, b);
        };
    }

    /**
     * {@link #matches(double, double)} for a result over {@code ranks} ranks. fp16's average
     * divides each input before the sum (ReduceOp.AVG): each of the {@code ranks} quotients
     * rounds by at most half an fp16 ulp of the largest input over the ranks (6 / ranks), each of
     * the partial sums by at most half one of 6. That bound stays below the 1 / ranks that a
     * missing, swapped or doubled rank moves the average by up to 20 ranks; beyond, the fp16
     * average no longer tells every rank's contribution apart.
     */
    public boolean matches(double got, double expected, int ranks) {
        if (type == DataType.F16 && op == ReduceOp.AVG
                && Math.abs(got - expected) <= ranks * halfUlpOfHalf(6.0 / ranks) + (ranks - 1) * halfUlpOfHalf(6)) {
            return true;
        }
        return matches(got, expected);
    }

    /** Half the distance between {@code v} (a normal fp16 value) and the next fp16 value up. */
    private static double halfUlpOfHalf(double v) {
        return Math.ulp((float) v) * 4096; // fp16 keeps 10 of fp32's 23 fraction bits
    }

    /** Whether {@code got} is the expected value: exact for integers, within the type's rounding for floats. */
    public boolean matches(double got, double expected) {
        if (got == expected) {
            return true;
        }
        double tolerance = switch (type) {
            case F64 -> 1e-12;
            case F32 -> 1e-6;
            case F16 -> 2e-3;
            case BF16 -> 1.6e-2;
            default -> 0;
        };
        return Math.abs(got - expected) <= tolerance * Math.max(1, Math.abs(expected));
    }
}
