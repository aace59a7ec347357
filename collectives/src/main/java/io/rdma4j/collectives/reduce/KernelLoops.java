package io.rdma4j.collectives.reduce;

/** The form of the fp32/fp64/int32/int64 kernels' loops; {@link Simd#LOOPS} chooses it once per JVM. */
enum KernelLoops {
    /** Whole SIMD vectors ({@link VectorKernels}), then per-element segment access for the rest. */
    VECTOR,
    /** Per-element segment access, which C2 compiles to plain loads and stores. */
    SEGMENT,
    /**
     * Blocks copied into heap arrays, combined there and copied back ({@link Blocks},
     * {@link ArrayLoops}): for a JVM without C2, whose per-element segment access stays a chain of
     * calls (see {@link Simd}).
     */
    STAGED
}
