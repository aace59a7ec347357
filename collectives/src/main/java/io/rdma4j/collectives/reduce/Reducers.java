package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

/** The table of kernels, one stateless instance per data type and operator (see {@link Simd}). */
final class Reducers {
    private static final Reducer[][] TABLE = table(Simd.ENABLED);
    private static final Reducer[][] SCALAR = Simd.ENABLED ? table(false) : TABLE;

    private static Reducer[][] table(boolean simd) {
        Reducer[][] t = new Reducer[DataType.values().length][ReduceOp.values().length];
        for (ReduceOp op : ReduceOp.values()) {
            t[DataType.F32.ordinal()][op.ordinal()] = new F32Reducer(op, simd);
            t[DataType.F64.ordinal()][op.ordinal()] = new F64Reducer(op, simd);
            t[DataType.BF16.ordinal()][op.ordinal()] = new HalfReducer(DataType.BF16, op);
            t[DataType.F16.ordinal()][op.ordinal()] = new HalfReducer(DataType.F16, op);
            t[DataType.I32.ordinal()][op.ordinal()] = new I32Reducer(op, simd);
            t[DataType.I64.ordinal()][op.ordinal()] = new I64Reducer(op, simd);
            t[DataType.U8.ordinal()][op.ordinal()] = new U8Reducer(op);
        }
        return t;
    }

    private Reducers() {
    }

    static Reducer of(DataType type, ReduceOp op) {
        return TABLE[type.ordinal()][op.ordinal()];
    }

    /** The scalar-only kernel (the same object as {@link #of} when SIMD is off); for tests. */
    static Reducer scalar(DataType type, ReduceOp op) {
        return SCALAR[type.ordinal()][op.ordinal()];
    }
}
