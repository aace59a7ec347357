package io.rdma4j.collectives;

/**
 * Reduction operators. {@link #AVG} is {@link #SUM} followed by a division by the number of
 * contributing ranks (truncating for integer types, of the sum as it wrapped), except for
 * {@link DataType#F16}: there, as NCCL and PyTorch's DDP do, each rank's input is divided first
 * and the quotients are summed, since fp16's largest value (65504) would cap the sum of n inputs,
 * and with it their average, at 65504 / n (a gradient scaled up for fp16 training overflowed to
 * infinity). The price is rounding: each quotient and each partial sum rounds to fp16, so where
 * inputs of opposite signs cancel, the result may be a few units in the last place of the
 * largest input away from the exact average, and the division is a pass over the input before
 * the call (into the receive buffer; a reduce-scatter's, and a reduce's other ranks', into
 * registered scratch as large as their send buffer, kept for later calls). See
 * {@link io.rdma4j.collectives.reduce.Reducer}
 * for the exact arithmetic per data type.
 */
public enum ReduceOp {
    SUM(0),
    PROD(1),
    MIN(2),
    MAX(3),
    AVG(4);

    private final int code;

    ReduceOp(int code) {
        this.code = code;
    }

    /** Stable wire code (used in collective descriptors). */
    public int code() {
        return code;
    }

    public static ReduceOp fromCode(int code) {
        for (ReduceOp o : values()) {
            if (o.code == code) {
                return o;
            }
        }
        throw new IllegalArgumentException("unknown reduce op code " + code);
    }
}
