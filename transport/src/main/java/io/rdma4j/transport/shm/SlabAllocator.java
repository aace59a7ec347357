package io.rdma4j.transport.shm;

import java.util.Map;
import java.util.TreeMap;

/**
 * First-fit allocator of byte ranges inside one slab, with coalescing on free. Only
 * {@code allocate()}/{@code close()} of buffers use it, never the request path.
 */
final class SlabAllocator {
    private final long capacity;
    private final TreeMap<Long, Long> free = new TreeMap<>(); // offset -> length

    SlabAllocator(long capacity) {
        this.capacity = capacity;
        free.put(0L, capacity);
    }

    long capacity() {
        return capacity;
    }

    /** Offset of {@code bytes} aligned to {@code alignment} (a power of two), or -1 when none fits. */
    long allocate(long bytes, long alignment) {
        for (Map.Entry<Long, Long> e : free.entrySet()) {
            long start = e.getKey();
            long end = start + e.getValue();
            long aligned = ShmLayout.align(start, alignment);
            if (aligned <= end && end - aligned >= bytes) {
                free.remove(start);
                if (aligned > start) {
                    free.put(start, aligned - start);
                }
                if (end > aligned + bytes) {
                    free.put(aligned + bytes, end - aligned - bytes);
                }
                return aligned;
            }
        }
        return -1;
    }

    /** Frees the range; returns the free run that now holds it (merged with free neighbours) as offset and length. */
    Map.Entry<Long, Long> free(long offset, long bytes) {
        if (offset < 0 || bytes < 0 || offset + bytes > capacity) {
            throw new IllegalArgumentException("range [" + offset + ", +" + bytes + ") outside slab of " + capacity);
        }
        long start = offset;
        long end = offset + bytes;
        Map.Entry<Long, Long> before = free.floorEntry(offset);
        if (before != null && before.getKey() + before.getValue() > offset) {
            throw new IllegalStateException("range at " + offset + " freed twice");
        }
        if (before != null && before.getKey() + before.getValue() == offset) {
            start = before.getKey();
            free.remove(before.getKey());
        }
        Long after = free.ceilingKey(offset);
        if (after != null && after < end) {
            throw new IllegalStateException("range at " + offset + " overlaps a free range");
        }
        if (after != null && after == end) {
            end += free.remove(after);
        }
        free.put(start, end - start);
        return Map.entry(start, end - start);
    }

    /** Bytes currently free (for tests and diagnostics). */
    long freeBytes() {
        long sum = 0;
        for (long len : free.values()) {
            sum += len;
        }
        return sum;
    }
}
