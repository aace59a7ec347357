package io.rdma4j.collectives.reduce;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * One native segment over the whole address space, through which the kernels reach native
 * operands by address. A kernel's loads and stores are calls on {@link MemorySegment}, and the JIT
 * compiles them for the segment classes it has seen at each of them: a process whose collectives
 * reduce out of the shm transport's file mappings ({@code MappedMemorySegmentImpl}) and out of
 * plain native buffers ({@code NativeMemorySegmentImpl}) got kernels that test each operand's
 * class on every vector, and how fast the small sizes ran depended on which algorithms had run
 * before. Through this segment every call site sees one class, whatever the caller passes.
 * Measured: a 2-rank shm allreduce of 1-4 KiB (the shared window, whose operands are mappings)
 * took 0.75 / 1.03 / 1.56 us at 1 / 2 / 4 KiB when the run stopped at 16 KiB, but 0.91 / 1.30 /
 * 2.08 us once the run reached 32 KiB, where the ring's warm-up passed native buffers to the same
 * kernel first ({@code allreduce-perf --ranks 2 -b 8 -e 16K} against {@code -e 32K}, {@code -n
 * 2000 -w 200 -R 3 -p out}). The sizes below {@code ArithmeticReducer.SIMD_MIN_BYTES}, which
 * the scalar loop reduces, did not move with the segment classes, and keep their operands.
 *
 * <p>The checks a segment makes on every access are made once per call instead ({@link
 * #address}): bounds, liveness, the accessing thread, and read-only for the destination. A
 * segment that another thread closes while a kernel reads it (a misuse: a buffer handed to an
 * operation stays alive until the operation completed) ends the process instead of throwing,
 * as with {@code BulkCopy}'s memmove. Where restricted methods are refused ({@code
 * --illegal-native-access=deny} without {@code --enable-native-access} for this module) there is
 * no such segment and the kernels take the operands' own segments.
 */
final class WholeMemory {
    /** The whole address space, or null where it may not be had. */
    static final MemorySegment ALL = all();

    private WholeMemory() {
    }

    private static MemorySegment all() {
        try {
            return MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
        } catch (IllegalCallerException | UnsupportedOperationException refused) {
            return null;
        }
    }

    /** Whether the kernels reach all three operands through {@link #ALL}. */
    static boolean covers(MemorySegment d, MemorySegment a, MemorySegment b) {
        return ALL != null && d.isNative() && a.isNative() && b.isNative();
    }

    /**
     * The address of bytes {@code [offset, offset + bytes)} of native segment {@code s}, after
     * the checks that its own accessors would make (and throwing what they throw).
     */
    static long address(MemorySegment s, long offset, long bytes, boolean written) {
        Objects.checkFromIndexSize(offset, bytes, s.byteSize());
        if (!s.scope().isAlive()) {
            throw new IllegalStateException("Already closed");
        }
        if (!s.isAccessibleBy(Thread.currentThread())) {
            throw new WrongThreadException("Attempted access outside owning thread");
        }
        if (written && s.isReadOnly()) {
            throw new IllegalArgumentException("Attempt to write a read-only segment");
        }
        return s.address() + offset;
    }
}
