package io.rdma4j.transport.shm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * A single-producer/single-consumer ring of fixed-size entries in shared memory, used across
 * processes. The producer fills an entry with plain stores and then publishes it with a
 * release-store of the entry's own 32-bit sequence word (at {@code sequenceOffset} in the
 * entry: the entry's position in the stream plus one); the consumer polls the word of the entry
 * it expects next with an acquire load, so it sees the entry's fields (and any data the producer
 * copied before publishing) as soon as the word matches. A message thus costs the consumer one
 * cache line from the producer's core, not two (a separate tail counter, then the entry). The
 * consumer hands space back through a head counter on a cache-line pair of its own, which the
 * producer reads only when its cached copy says the ring is full.
 *
 * <p>Each process holds its own flyweight over the ring and uses only its side's methods.
 */
final class SpscRing {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    private static final long HEAD = 0;
    private static final long ENTRIES = 2L * ShmLayout.CACHE_LINE;

    private final MemorySegment memory;
    private final long base;
    private final long mask;
    private final int entrySize;
    private final long sequenceOffset;
    private final long capacity;

    private long head;        // consumer: next entry to read; producer: last head seen
    private long tail;        // producer: next entry to write

    /**
     * @param sequenceOffset where in each entry the 4-byte aligned sequence word lies; the
     *                       entry's fields must leave those 4 bytes alone
     */
    SpscRing(MemorySegment memory, long base, int capacity, int entrySize, int sequenceOffset) {
        if (Integer.bitCount(capacity) != 1 || sequenceOffset < 0 || sequenceOffset > entrySize - 4
                || (sequenceOffset & 3) != 0 || (entrySize & 3) != 0) {
            throw new IllegalArgumentException("ring of " + capacity + " entries of " + entrySize
                    + " bytes with the sequence at " + sequenceOffset);
        }
        this.memory = memory;
        this.base = base;
        this.capacity = capacity;
        this.mask = capacity - 1;
        this.entrySize = entrySize;
        this.sequenceOffset = sequenceOffset;
        this.head = (long) LONG.getAcquire(memory, base + HEAD);
        this.tail = head; // a producer's flyweight is made before it publishes anything
    }

    static long bytes(int capacity, int entrySize) {
        return ENTRIES + ShmLayout.align((long) capacity * entrySize, ShmLayout.CACHE_LINE);
    }

    MemorySegment memory() {
        return memory;
    }

    // ---- producer side

    /** Offset (in {@link #memory()}) of the next free entry, or -1 when the ring is full. */
    long claim() {
        if (tail - head >= capacity) {
            head = (long) LONG.getAcquire(memory, base + HEAD);
            if (head > tail || head < tail - capacity) {
                throw new IllegalStateException("shared ring corrupted by its consumer: head " + head + ", tail " + tail);
            }
            if (tail - head >= capacity) {
                return -1;
            }
        }
        return entry(tail);
    }

    /** Makes the claimed entry, and everything stored before, visible to the consumer. */
    void publish() {
        INT.setRelease(memory, entry(tail) + sequenceOffset, (int) (tail + 1));
        tail++;
    }

    // ---- consumer side

    /** Offset of the oldest published entry, or -1 when the ring is empty. */
    long peek() {
        long e = entry(head);
        int seen = (int) INT.getAcquire(memory, e + sequenceOffset);
        int expected = (int) (head + 1);
        if (seen == expected) {
            return e;
        }
        // Not yet written in this lap: the previous lap's word, or a never-written zero in the first.
        if (seen == (int) (head + 1 - capacity) || (seen == 0 && head < capacity)) {
            return -1;
        }
        // The producer is another process: never trust its memory blindly.
        throw new IllegalStateException("shared ring corrupted by its producer: entry " + head
                + " carries sequence " + Integer.toUnsignedString(seen) + ", expected " + Integer.toUnsignedString(expected));
    }

    /** Returns the entry {@link #peek()} gave back to the producer. */
    void release() {
        head++;
        LONG.setRelease(memory, base + HEAD, head);
    }

    private long entry(long sequence) {
        return base + ENTRIES + (sequence & mask) * entrySize;
    }
}
