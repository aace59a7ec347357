package io.rdma4j.collectives.reduce;

import java.lang.foreign.MemorySegment;

/**
 * Per-thread heap scratch of the kernels that work on blocks copied out of their segments: a
 * block of each operand goes into these arrays with bulk copies, is combined there, and the
 * result block is copied back.
 *
 * <ul>
 *   <li>The half-precision kernels always: C2 vectorizes the fp16/bf16 conversions in counted
 *       loops over heap arrays but not in loops over (native) {@link MemorySegment}s, where they
 *       ran 10-50x slower than fp32. The float and int arrays of bf16 are reinterpreted by bulk
 *       copies through their segment views, because a per-element {@link Float#intBitsToFloat}
 *       also keeps a loop scalar.</li>
 *   <li>The fp32/fp64/int32/int64 kernels on a JVM without C2 ({@link KernelLoops#STAGED}).</li>
 * </ul>
 */
final class Blocks {
    /** Elements per block: 4 arrays of floats (32 KiB) plus the shorts fit a core's L2 with room. */
    static final int BLOCK = 2048;

    private static final ThreadLocal<Blocks> CURRENT = ThreadLocal.withInitial(Blocks::new);

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
    /** The 64-bit blocks, allocated by {@link #wide()}: only the staged fp64/int64 kernels use them. */
    double[] xd;
    double[] yd;
    long[] xl;
    long[] yl;

    private Blocks() {
    }

    /** The calling thread's blocks (allocated on its first reduction in blocks). */
    static Blocks current() {
        return CURRENT.get();
    }

    /** The calling thread's blocks, with the 64-bit arrays. */
    static Blocks wide() {
        Blocks k = CURRENT.get();
        if (k.xd == null) {
            k.xd = new double[BLOCK];
            k.yd = new double[BLOCK];
            k.xl = new long[BLOCK];
            k.yl = new long[BLOCK];
        }
        return k;
    }
}
