package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

/** The table of kernels, one stateless instance per data type and operator. */
final class Reducers {
    private static final Reducer[][] TABLE = new Reducer[DataType.values().length][ReduceOp.values().length];

    static {
        for (ReduceOp op : ReduceOp.values()) {
            TABLE[DataType.F32.ordinal()][op.ordinal()] = new F32Reducer(op);
            TABLE[DataType.F64.ordinal()][op.ordinal()] = new F64Reducer(op);
            TABLE[DataType.BF16.ordinal()][op.ordinal()] = new HalfReducer(DataType.BF16, op);
            TABLE[DataType.F16.ordinal()][op.ordinal()] = new HalfReducer(DataType.F16, op);
            TABLE[DataType.I32.ordinal()][op.ordinal()] = new I32Reducer(op);
            TABLE[DataType.I64.ordinal()][op.ordinal()] = new I64Reducer(op);
            TABLE[DataType.U8.ordinal()][op.ordinal()] = new U8Reducer(op);
        }
    }

    private Reducers() {
    }

    static Reducer of(DataType type, ReduceOp op) {
        return TABLE[type.ordinal()][op.ordinal()];
    }
}
