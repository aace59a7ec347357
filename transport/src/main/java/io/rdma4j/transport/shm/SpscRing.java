package io.rdma4j.transport.shm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * A single-producer/single-consumer ring of fixed-size entries in shared memory, used across
 * processes. The producer fills an entry with plain stores and then publishes it with a
 * release-store of the tail counter; the consumer reads the tail with an acquire load, so it
 * sees the entry (and any data the producer copied before publishing). The consumer hands space
 * back the same way through the head counter. Head and tail sit on separate cache-line pairs so
 * the two processes do not write the same line.
 *
 * <p>Each process holds its own flyweight over the ring and uses only its side's methods; the
 * other side's counter is cached locally and re-read only when the cached value says the ring is
 * full (producer) or empty (consumer).
 */
final class SpscRing {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final long TAIL = 0;
    private static final long HEAD = 2L * ShmLayout.CACHE_LINE;
    private static final long ENTRIES = 4L * ShmLayout.CACHE_LINE;

    private final MemorySegment memory;
    private final long base;
    private final long mask;
    private final int entrySize;
    private final long capacity;

    private long head;        // consumer: next entry to read; producer: last head seen
    private long tail;        // producer: next entry to write; consumer: last tail seen

    SpscRing(MemorySegment memory, long base, int capacity, int entrySize) {
        this.memory = memory;
        this.base = base;
        this.capacity = capacity;
        this.mask = capacity - 1;
        this.entrySize = entrySize;
        this.head = (long) LONG.getAcquire(memory, base + HEAD);
        this.tail = (long) LONG.getAcquire(memory, base + TAIL);
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
            if (tail - head >= capacity) {
                return -1;
            }
        }
        return entry(tail);
    }

    /** Makes the claimed entry, and everything stored before, visible to the consumer. */
    void publish() {
        tail++;
        LONG.setRelease(memory, base + TAIL, tail);
    }

    // ---- consumer side

    /** Offset of the oldest published entry, or -1 when the ring is empty. */
    long peek() {
        if (head == tail) {
            tail = (long) LONG.getAcquire(memory, base + TAIL);
            if (head == tail) {
                return -1;
            }
            if (tail - head > capacity || tail < head) {
                // The producer is another process: never trust its counter blindly.
                throw new IllegalStateException("shared ring corrupted by its producer: tail " + tail + ", head " + head);
            }
        }
        return entry(head);
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
