package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;

/**
 * An element-wise reduction kernel for one {@link DataType} and {@link ReduceOp} over
 * {@link MemorySegment}s (native or heap), little-endian, unaligned access allowed. Kernels
 * allocate nothing and are plain counted loops that the JIT compiles to straight-line code.
 *
 * <h2>Arithmetic semantics (identical on every rank and for every algorithm step)</h2>
 * <ul>
 *   <li>One reduction step combines two operands: {@code dst[i] = a[i] OP b[i]}. A collective
 *       applies {@code n - 1} such steps per element; the order in which ranks' contributions are
 *       combined depends on the algorithm, but every rank receives the same (bit-identical)
 *       result because each element's final value is computed once and then copied, or folded
 *       in the same order on every rank (the lower rank's operand first). {@code a OP b == b OP a}
 *       holds for every value but NaN: of two NaNs, which one's bits come out depends on the
 *       order ({@link Math#min(float, float)} returns its first NaN).</li>
 *   <li>{@link DataType#F32}/{@link DataType#F64}: IEEE arithmetic of that width.
 *       MIN/MAX follow {@link Math#min(float, float)} (NaN propagates, -0.0 &lt; +0.0).</li>
 *   <li>{@link DataType#BF16}/{@link DataType#F16}: each step widens both operands to fp32,
 *       combines them in fp32 and rounds the result back to the storage type with
 *       round-to-nearest-even (NaN stays NaN, overflow becomes infinity). Rounding therefore
 *       happens after every pairwise step, not once at the end.</li>
 *   <li>{@link DataType#I32}/{@link DataType#I64}: two's complement, wrapping on overflow
 *       (Java semantics). {@link DataType#U8}: unsigned, SUM and PROD wrap modulo 256, MIN/MAX
 *       compare unsigned.</li>
 *   <li>{@link ReduceOp#AVG}: SUM steps, then {@link #finish} divides each fully reduced element
 *       once by the number of contributors n: floating types divide in fp32 (fp64 for F64) and
 *       round to the storage type; integer types use truncating division of the (wrapped) sum.
 *       The collectives average {@link DataType#F16} the other way round (see {@link ReduceOp}):
 *       {@link #finish} divides each input, SUM steps add the quotients.</li>
 * </ul>
 */
public interface Reducer {

    DataType type();

    ReduceOp op();

    /**
     * {@code dst[i] = a[i] OP b[i]} for {@code count} elements at the given byte offsets.
     * {@code dst} may be the same memory as {@code a} or {@code b} at the same offset (in-place),
     * but must not partially overlap either.
     */
    void reduceInto(MemorySegment dst, long dstOffset, MemorySegment a, long aOffset,
                    MemorySegment b, long bOffset, long count);

    /** In place: {@code dst[i] = dst[i] OP src[i]}. */
    default void reduce(MemorySegment dst, long dstOffset, MemorySegment src, long srcOffset, long count) {
        reduceInto(dst, dstOffset, dst, dstOffset, src, srcOffset, count);
    }

    /** In place from offset 0: {@code dst[i] = dst[i] OP src[i]}. */
    default void reduce(MemorySegment dst, MemorySegment src, long count) {
        reduceInto(dst, 0, dst, 0, src, 0, count);
    }

    /**
     * Post-processing of fully reduced elements, applied exactly once per element: divides by
     * {@code contributors} for {@link ReduceOp#AVG}, does nothing for the other operators.
     */
    void finish(MemorySegment data, long offset, long count, int contributors);

    /** Whether {@link #finish} does anything (lets algorithms skip a pass). */
    default boolean needsFinish() {
        return op() == ReduceOp.AVG;
    }

    /** The kernel for {@code type} and {@code op}; kernels are stateless singletons. */
    static Reducer of(DataType type, ReduceOp op) {
        return Reducers.of(type, op);
    }
}
