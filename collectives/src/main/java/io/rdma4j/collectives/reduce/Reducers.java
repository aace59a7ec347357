package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

/**
 * The tables of kernels, one stateless instance per data type and operator, one table per
 * {@link KernelLoops} form; {@link #of} serves the form {@link Simd} chose for this JVM.
 */
final class Reducers {
    private static final Reducer[][][] TABLES = tables();

    private static Reducer[][][] tables() {
        KernelLoops[] forms = KernelLoops.values();
        Reducer[][][] t = new Reducer[forms.length][][];
        for (KernelLoops loops : forms) {
            // a VECTOR table is only built, not run, on a JVM without the vector module: the
            // kernels load VectorKernels when they first use it
            t[loops.ordinal()] = table(loops);
        }
        return t;
    }

    private static Reducer[][] table(KernelLoops loops) {
        Reducer[][] t = new Reducer[DataType.values().length][ReduceOp.values().length];
        for (ReduceOp op : ReduceOp.values()) {
            t[DataType.F32.ordinal()][op.ordinal()] = new F32Reducer(op, loops);
            t[DataType.F64.ordinal()][op.ordinal()] = new F64Reducer(op, loops);
            t[DataType.BF16.ordinal()][op.ordinal()] = new HalfReducer(DataType.BF16, op, loops);
            t[DataType.F16.ordinal()][op.ordinal()] = new HalfReducer(DataType.F16, op, loops);
            t[DataType.I32.ordinal()][op.ordinal()] = new I32Reducer(op, loops);
            t[DataType.I64.ordinal()][op.ordinal()] = new I64Reducer(op, loops);
            t[DataType.U8.ordinal()][op.ordinal()] = new U8Reducer(op);
        }
        return t;
    }

    private Reducers() {
    }

    static Reducer of(DataType type, ReduceOp op) {
        return in(Simd.LOOPS, type, op);
    }

    /** The kernel in the given loop form (the same object as {@link #of} for this JVM's form); for tests. */
    static Reducer in(KernelLoops loops, DataType type, ReduceOp op) {
        return TABLES[loops.ordinal()][type.ordinal()][op.ordinal()];
    }
}
