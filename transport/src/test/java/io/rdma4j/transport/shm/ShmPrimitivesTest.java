package io.rdma4j.transport.shm;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The building blocks on their own: ring, region table, slab allocator. */
class ShmPrimitivesTest {

    @Test
    void ringDeliversInOrderAcrossWrapAroundAndRefusesWhenFull() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(SpscRing.bytes(4, 8), 64);
            SpscRing producer = new SpscRing(mem, 0, 4, 8, 4);
            SpscRing consumer = new SpscRing(mem, 0, 4, 8, 4);
            int next = 0;
            int expected = 0;
            for (int round = 0; round < 10; round++) {
                for (int i = 0; i < 4; i++) {
                    long e = producer.claim();
                    mem.set(ValueLayout.JAVA_INT, e, next++);
                    producer.publish();
                }
                assertEquals(-1, producer.claim(), "a full ring has no free entry");
                for (int i = 0; i < 3; i++) {
                    long e = consumer.peek();
                    assertEquals(expected++, mem.get(ValueLayout.JAVA_INT, e));
                    consumer.release();
                }
                long e = consumer.peek();
                assertEquals(expected++, mem.get(ValueLayout.JAVA_INT, e));
                consumer.release();
                assertEquals(-1, consumer.peek(), "an empty ring has nothing to read");
            }
        }
    }

    @Test
    void anEntryIsVisibleOnlyOnceItsSequenceWordIsPublished() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(SpscRing.bytes(4, 8), 64);
            SpscRing producer = new SpscRing(mem, 0, 4, 8, 4);
            SpscRing consumer = new SpscRing(mem, 0, 4, 8, 4);
            for (int lap = 0; lap < 3; lap++) {
                for (int i = 0; i < 4; i++) {
                    long e = producer.claim();
                    mem.set(ValueLayout.JAVA_INT, e, 42);
                    assertEquals(-1, consumer.peek(), "fields written, sequence word not: lap " + lap + ", entry " + i);
                    producer.publish();
                    assertEquals(e, consumer.peek());
                    consumer.release();
                }
            }
        }
    }

    @Test
    void aCorruptSequenceOrHeadIsDetectedNotFollowed() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(SpscRing.bytes(4, 8), 64);
            SpscRing consumer = new SpscRing(mem, 0, 4, 8, 4);
            long first = new SpscRing(mem, 0, 4, 8, 4).claim(); // where a producer would write entry 0
            mem.set(ValueLayout.JAVA_INT, first + 4, 1_000); // neither this lap's word nor the last
            assertThrows(IllegalStateException.class, consumer::peek);

            MemorySegment other = arena.allocate(SpscRing.bytes(4, 8), 64);
            SpscRing producer = new SpscRing(other, 0, 4, 8, 4);
            for (int i = 0; i < 4; i++) {
                producer.claim();
                producer.publish();
            }
            other.set(ValueLayout.JAVA_LONG, 0, 1_000); // a head beyond everything published
            assertThrows(IllegalStateException.class, producer::claim);
        }
    }

    @Test
    void regionTableResolvesOnlyPublishedLiveBytes() {
        ShmLayout layout = new ShmLayout(0, 1, 2, 2, 2, 1, 64, 8, 1, 0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment file = arena.allocate(layout.fileSize, 4096);
            RegionTable table = new RegionTable(file, layout);
            long key = RegionTable.key(3, 1);
            table.publish(3, key, 2, 1000, 500);
            assertEquals(2, table.resolve(key, 1000, 500));
            assertEquals(2, table.resolve(key, 1499, 1));
            assertEquals(2, table.resolve(key, 1500, 0));
            assertEquals(RegionTable.OUT_OF_BOUNDS, table.resolve(key, 999, 10));
            assertEquals(RegionTable.OUT_OF_BOUNDS, table.resolve(key, 1400, 101));
            assertEquals(RegionTable.OUT_OF_BOUNDS, table.resolve(key, 1000, Long.MAX_VALUE));
            assertEquals(RegionTable.STALE, table.resolve(RegionTable.key(3, 2), 1000, 1), "another generation");
            assertEquals(RegionTable.STALE, table.resolve(RegionTable.key(99, 1), 1000, 1), "index beyond the table");
            assertEquals(RegionTable.STALE, table.resolve(0, 1000, 1));
            table.clear(3);
            assertEquals(RegionTable.STALE, table.resolve(key, 1000, 1), "freed");
        }
    }

    @Test
    void layoutRejectsWindowsThatAreNotWholePagesAndGeometriesThatOverflow() {
        assertThrows(IllegalArgumentException.class, () -> new ShmLayout(0, 2, 2, 2, 2, 1, 64, 8, 1, 100));
        assertThrows(IllegalArgumentException.class, () -> new ShmLayout(0, 2, 2, 2, 2, 1, 64, 8, 1, -4096));
        // a peer's header with a geometry whose file size overflows: refused, not a negative size
        // that passes the check against the mapped file's length
        assertThrows(IllegalArgumentException.class, () -> new ShmLayout(0, 2, 2, 2, 2, 4, 1L << 62, 8, 1, 0));
        assertThrows(IllegalArgumentException.class,
                () -> new ShmLayout(0, Integer.MAX_VALUE, 2, 2, 2, Integer.MAX_VALUE, ShmLayout.MAX_CHUNK_BYTES, 8, 1, 0));
    }

    @Test
    void slabAllocatorAlignsReusesAndCoalesces() {
        SlabAllocator a = new SlabAllocator(1 << 16);
        long x = a.allocate(100, 64);
        long y = a.allocate(5000, 4096);
        long z = a.allocate(64, 64);
        assertEquals(0, x);
        assertEquals(4096, y);
        assertEquals(128, z, "fits in the gap before the aligned block");
        assertEquals(-1, a.allocate(1 << 16, 64));
        a.free(x, 100);
        a.free(z, 64);
        a.free(y, 5000);
        assertEquals(1 << 16, a.freeBytes());
        assertEquals(0, a.allocate(1 << 16, 64), "all coalesced into one range again");
        assertThrows(IllegalStateException.class, () -> {
            a.free(0, 1 << 16);
            a.free(0, 64);
        });
    }

    @Test
    void layoutRoundTripsThroughTheHeader() {
        ShmLayout layout = new ShmLayout(2, 4, 8, 16, 32, 3, 128, 16, 100, 8192);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment file = arena.allocate(layout.fileSize, 4096);
            layout.writeHeader(file, 4242, false);
            ShmLayout read = ShmLayout.readHeader(file, 2, 4, "test file");
            assertEquals(layout.fileSize, read.fileSize);
            assertEquals(layout.area(3), read.area(3));
            assertEquals(100, read.requestCapacity);
            assertEquals(8192, read.windowBytes);
            assertEquals(4096 + 8192, read.regionTableOffset, "the window lies between header and region table");
            assertEquals(4242, ShmLayout.pid(file));
            assertThrows(IllegalStateException.class, () -> ShmLayout.readHeader(file, 1, 4, "test file"));
            assertThrows(IllegalStateException.class, () -> ShmLayout.readHeader(file.asSlice(0, 4096), 2, 4, "short file"));
        }
    }

    @Test
    void slotQueueRemovesASlotFromAnyPlaceAndKeepsTheRestInOrder() {
        int[] next = new int[8];
        SlotQueue q = new SlotQueue(next);
        for (int s : new int[] {5, 2, 7, 1}) {
            q.add(s);
        }
        assertTrue(q.contains(7));
        assertFalse(q.contains(3));
        assertFalse(q.removeIfPresent(3));
        assertTrue(q.removeIfPresent(7)); // middle
        assertTrue(q.removeIfPresent(5)); // head
        assertTrue(q.removeIfPresent(1)); // tail
        assertFalse(q.contains(7));
        q.add(6); // after the old tail went, the new one links behind 2
        assertEquals(2, q.first());
        assertEquals(6, q.next(2));
        assertEquals(-1, q.next(6));
    }
}
