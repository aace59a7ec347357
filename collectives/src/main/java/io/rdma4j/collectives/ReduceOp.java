package io.rdma4j.collectives;

/**
 * Reduction operators. {@link #AVG} is {@link #SUM} followed by a division by the number of
 * contributing ranks (truncating for integer types); see {@link io.rdma4j.collectives.reduce.Reducer}
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
