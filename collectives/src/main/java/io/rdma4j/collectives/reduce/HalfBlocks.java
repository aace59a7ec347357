package io.rdma4j.collectives.reduce;

import java.lang.foreign.MemorySegment;

/**
 * Per-thread heap scratch of the half-precision kernels. C2 vectorizes the fp16/bf16 conversions
 * in counted loops over heap arrays but not in loops over (native) {@link MemorySegment}s, where
 * they ran 10-50x slower than fp32; so the kernels move a cache-sized block of each operand into
 * these arrays with bulk copies, combine there, and copy the block back. The float and int arrays
 * of bf16 are reinterpreted by bulk copies through their segment views, because a per-element
 * {@link Float#intBitsToFloat} also keeps a loop scalar.
 */
final class HalfBlocks {
    /** Elements per block: 4 arrays of floats (32 KiB) plus the shorts fit a core's L2 with room. */
    static final int BLOCK = 2048;

    private static final ThreadLocal<HalfBlocks> CURRENT = ThreadLocal.withInitial(HalfBlocks::new);

    final short[] x = new short[BLOCK];
    final short[] y = new short[BLOCK];
    final int[] xi = new int[BLOCK];
    final int[] yi = new int[BLOCK];
    final float[] xf = new float[BLOCK];
    final float[] yf = new float[BLOCK];
    final MemorySegment xiView = MemorySegment.ofArray(xi);
    final MemorySegment yiView = MemorySegment.ofArray(yi);
    final MemorySegment xfView = MemorySegment.ofArray(xf);
    final MemorySegment yfView = MemorySegment.ofArray(yf);

    private HalfBlocks() {
    }

    /** The calling thread's blocks (allocated on its first half-precision reduction). */
    static HalfBlocks current() {
        return CURRENT.get();
    }
}
