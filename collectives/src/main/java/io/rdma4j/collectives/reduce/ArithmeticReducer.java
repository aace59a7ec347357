package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.ref.Reference;

/**
 * The fp32/fp64/int32/int64 kernels, in the {@link KernelLoops} form the JVM's JIT runs best:
 * the whole SIMD vectors first ({@link VectorKernels}) and the operator's scalar loop from where
 * they stopped; the scalar loop alone; or, without C2, blocks staged in heap arrays. Subclasses
 * hold one counted loop per operator, so that each stays a simple, monomorphic loop for the JIT.
 */
abstract class ArithmeticReducer extends AbstractReducer {
    /**
     * Fewer bytes than this go through the scalar loop only. Called with a few vectors' worth
     * per call (a small allreduce: 8 loop trips for 64 floats), the SIMD loop's profile looks
     * cold to C2 beside its many invocations, and a C2 compile that did not inline the vector
     * operations stays boxed: {@code SteadyStateAllocationTest} saw 1536 bytes allocated per
     * 256-byte allreduce in about one JVM of five (both ranks; -XX:+PrintCompilation showed the
     * kernel recompiled after uncommon traps). The scalar loop costs well under 0.1 us here.
     * It is also where native operands start to go through {@link WholeMemory}: the scalar loop
     * of smaller calls did not slow down with mixed segment classes, so they keep the path they
     * had (the segment API's checks, no checks of ours on top).
     */
    static final long SIMD_MIN_BYTES = 1024;

    private final KernelLoops loops;

    ArithmeticReducer(DataType type, ReduceOp op, KernelLoops loops) {
        super(type, op);
        this.loops = loops;
    }

    @Override
    public final void reduceInto(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        long bytes = type.bytes(n);
        if (bytes >= SIMD_MIN_BYTES && WholeMemory.covers(d, a, b)) {
            MemorySegment all = WholeMemory.ALL;
            kernel(all, WholeMemory.address(d, dOff, bytes, true), all, WholeMemory.address(a, aOff, bytes, false),
                    all, WholeMemory.address(b, bOff, bytes, false), n);
            Reference.reachabilityFence(d);
            Reference.reachabilityFence(a);
            Reference.reachabilityFence(b);
        } else {
            kernel(d, dOff, a, aOff, b, bOff, n);
        }
    }

    private void kernel(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n) {
        if (loops == KernelLoops.STAGED) {
            long size = type.byteSize();
            for (long done = 0; done < n; done += Blocks.BLOCK) {
                long o = done * size;
                // both operands are read before the block of d is written: d may be a or b (in place)
                stagedBlock(d, dOff + o, a, aOff + o, b, bOff + o, (int) Math.min(Blocks.BLOCK, n - done));
            }
            return;
        }
        long from = simd(n) ? vectors(d, dOff, a, aOff, b, bOff, n) : 0;
        switch (op) {
            case SUM, AVG -> sum(d, dOff, a, aOff, b, bOff, from, n);
            case PROD -> prod(d, dOff, a, aOff, b, bOff, from, n);
            case MIN -> min(d, dOff, a, aOff, b, bOff, from, n);
            case MAX -> max(d, dOff, a, aOff, b, bOff, from, n);
        }
    }

    @Override
    public final void finish(MemorySegment d, long off, long n, int contributors) {
        if (op != ReduceOp.AVG) {
            return;
        }
        checkContributors(contributors);
        if (loops != KernelLoops.STAGED) {
            long from = simd(n) ? vectorsDivided(d, off, n, contributors) : 0;
            divide(d, off, from, n, contributors);
            return;
        }
        long size = type.byteSize();
        for (long done = 0; done < n; done += Blocks.BLOCK) {
            stagedDivide(d, off + done * size, (int) Math.min(Blocks.BLOCK, n - done), contributors);
        }
    }

    /** One block of {@code m <= Blocks.BLOCK} elements of {@link #reduceInto}, through the thread's {@link Blocks}. */
    abstract void stagedBlock(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, int m);

    /** Whether a call over {@code n} elements starts with the SIMD loop (see {@link #SIMD_MIN_BYTES}). */
    private boolean simd(long n) {
        return loops == KernelLoops.VECTOR && type.bytes(n) >= SIMD_MIN_BYTES;
    }

    /** One block of AVG's division, through the thread's {@link Blocks}. */
    abstract void stagedDivide(MemorySegment d, long off, int m, int contributors);

    /** AVG's division of fully reduced elements {@code from..n}, element by element. */
    abstract void divide(MemorySegment d, long off, long from, long n, int contributors);

    /**
     * AVG's division of the whole SIMD vectors among {@code n} elements from element 0; returns
     * how many elements it did. None by default: the integer types have no vector division on
     * common CPUs (the Vector API would fall back to a per-lane loop slower than the scalar one).
     */
    long vectorsDivided(MemorySegment d, long off, long n, int contributors) {
        return 0;
    }

    /** The SIMD part: whole vectors from element 0; returns how many elements it did. */
    abstract long vectors(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long n);

    /** {@code d = a + b} for elements {@code from..n}; and likewise the other operators. */
    abstract void sum(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n);

    abstract void prod(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n);

    abstract void min(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n);

    abstract void max(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff, long from, long n);
}
