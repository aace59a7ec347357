package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

/** Type/op bookkeeping shared by the per-type kernels. */
abstract class AbstractReducer implements Reducer {
    final DataType type;
    final ReduceOp op;

    AbstractReducer(DataType type, ReduceOp op) {
        this.type = type;
        this.op = op;
    }

    @Override
    public final DataType type() {
        return type;
    }

    @Override
    public final ReduceOp op() {
        return op;
    }

    static void checkContributors(int contributors) {
        if (contributors < 1) {
            throw new IllegalArgumentException("AVG needs at least one contributor, got " + contributors);
        }
    }

    @Override
    public String toString() {
        return type + "/" + op;
    }
}
