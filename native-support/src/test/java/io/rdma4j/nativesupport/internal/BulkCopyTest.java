package io.rdma4j.nativesupport.internal;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** BulkCopy keeps MemorySegment.copy's contract on both sides of its size threshold. */
class BulkCopyTest {
    private static final long LARGE = 3 * BulkCopy.MIN_BYTES + 24;

    private static void fillIndex(MemorySegment s) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
        }
    }

    private static byte indexByte(long i) {
        return (byte) (i * 7 + 3);
    }

    @Test
    void memmoveIsOnHereUnlessTurnedOff() {
        assertEquals(BulkCopy.enabled(System.getProperty("rdma4j.memmove"), System.getenv("RDMA4J_MEMMOVE")),
                BulkCopy.enabled(), "this Linux libc has memmove: only the switch decides");
        assertTrue(BulkCopy.enabled(null, null));
        assertTrue(BulkCopy.enabled(null, "1"));
        assertFalse(BulkCopy.enabled(null, " OFF "));
        assertFalse(BulkCopy.enabled("false", "1"));
        assertTrue(BulkCopy.enabled("true", "0"), "the property wins");
    }

    @Test
    void copiesTheRangeAndNothingAroundItAtBothSizes() {
        for (long bytes : new long[] {BulkCopy.MIN_BYTES - 8, LARGE}) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment src = arena.allocate(bytes + 100);
                MemorySegment dst = arena.allocate(bytes + 100);
                fillIndex(src);
                dst.fill((byte) -1);
                BulkCopy.copy(src, 17, dst, 33, bytes);
                for (long i = 0; i < dst.byteSize(); i++) {
                    byte want = i >= 33 && i < 33 + bytes ? indexByte(i - 33 + 17) : (byte) -1;
                    assertEquals(want, dst.get(ValueLayout.JAVA_BYTE, i), bytes + " B, byte " + i);
                }
            }
        }
    }

    @Test
    void overlappingRangesMoveLikeMemmoveInBothDirections() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(LARGE + 64);
            fillIndex(s);
            BulkCopy.copy(s, 0, s, 64, LARGE); // forward overlap: the source read before it is overwritten
            for (long i = 0; i < LARGE; i++) {
                assertEquals(indexByte(i), s.get(ValueLayout.JAVA_BYTE, 64 + i), "forward, byte " + i);
            }
            fillIndex(s);
            BulkCopy.copy(s, 64, s, 0, LARGE);
            for (long i = 0; i < LARGE; i++) {
                assertEquals(indexByte(64 + i), s.get(ValueLayout.JAVA_BYTE, i), "backward, byte " + i);
            }
        }
    }

    @Test
    void badRangesClosedArenasAndReadOnlyTargetsThrowAsMemorySegmentCopyDoes() {
        Arena arena = Arena.ofConfined();
        MemorySegment src = arena.allocate(LARGE);
        MemorySegment dst = arena.allocate(LARGE);
        assertThrows(IndexOutOfBoundsException.class, () -> BulkCopy.copy(src, 1, dst, 0, LARGE));
        assertThrows(IndexOutOfBoundsException.class, () -> BulkCopy.copy(src, 0, dst, 8, LARGE));
        assertThrows(IndexOutOfBoundsException.class, () -> BulkCopy.copy(src, -8, dst, 0, LARGE - 8));
        assertThrows(IllegalArgumentException.class, () -> BulkCopy.copy(src, 0, dst.asReadOnly(), 0, LARGE));
        Arena other = Arena.ofConfined();
        MemorySegment gone = other.allocate(LARGE);
        other.close();
        assertThrows(IllegalStateException.class, () -> BulkCopy.copy(gone, 0, dst, 0, LARGE));
        assertThrows(IllegalStateException.class, () -> BulkCopy.copy(src, 0, gone, 0, LARGE));
        arena.close();
    }

    @Test
    void heapSegmentsAndSegmentsOfAnotherThreadGoThroughMemorySegmentCopy() throws Exception {
        byte[] heap = new byte[(int) LARGE];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(LARGE);
            fillIndex(src);
            BulkCopy.copy(src, 0, MemorySegment.ofArray(heap), 0, LARGE);
            assertEquals(indexByte(LARGE - 1), heap[(int) LARGE - 1]);
            MemorySegment dst = Arena.ofAuto().allocate(LARGE);
            Throwable t = CompletableFuture.supplyAsync(() -> {
                try {
                    BulkCopy.copy(src, 0, dst, 0, LARGE);
                    return null;
                } catch (RuntimeException e) {
                    return e;
                }
            }).get();
            assertInstanceOf(WrongThreadException.class, t, "a confined segment from another thread");
        }
    }
}
