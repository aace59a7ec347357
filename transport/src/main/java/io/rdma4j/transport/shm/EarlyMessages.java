package io.rdma4j.transport.shm;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Eager messages from one peer that arrived before a receive of their tag was posted, kept in
 * private memory so that the peer's event ring keeps moving. The peer sends eagerly only while
 * fewer than {@link #capacity} of its eager sends wait for their receive, so this never
 * overflows; storage is allocated once, with the connection.
 */
final class EarlyMessages {
    private final int capacity;
    private final int maxBytes;
    private final MemorySegment payloads;
    private final int[] tag;
    private final int[] length;
    private final long[] arrival;
    private final boolean[] used;
    private long arrivals;
    private int count;

    EarlyMessages(int capacity, int maxBytes) {
        this.capacity = capacity;
        this.maxBytes = maxBytes;
        this.payloads = MemorySegment.ofArray(new byte[capacity * maxBytes]);
        this.tag = new int[capacity];
        this.length = new int[capacity];
        this.arrival = new long[capacity];
        this.used = new boolean[capacity];
    }

    int size() {
        return count;
    }

    /** Keeps a copy of {@code bytes} bytes at {@code offset} in {@code from}; false when full. */
    boolean add(int messageTag, MemorySegment from, long offset, int bytes) {
        if (count == capacity) {
            return false;
        }
        int e = 0;
        while (used[e]) {
            e++;
        }
        MemorySegment.copy(from, offset, payloads, (long) e * maxBytes, bytes);
        tag[e] = messageTag;
        length[e] = bytes;
        arrival[e] = arrivals++;
        used[e] = true;
        count++;
        return true;
    }

    /** The oldest message of {@code wanted}, or -1. */
    int oldest(int wanted) {
        int best = -1;
        for (int e = 0, seen = 0; seen < count; e++) {
            if (used[e]) {
                seen++;
                if (tag[e] == wanted && (best < 0 || arrival[e] < arrival[best])) {
                    best = e;
                }
            }
        }
        return best;
    }

    int length(int e) {
        return length[e];
    }

    /** Where message {@code e}'s bytes lie: in {@link #payloads()}, from this offset. */
    long offset(int e) {
        return (long) e * maxBytes;
    }

    MemorySegment payloads() {
        return payloads;
    }

    /** Forgets message {@code e}, once it was delivered or refused. */
    void remove(int e) {
        used[e] = false;
        count--;
    }

    void clear() {
        Arrays.fill(used, false);
        count = 0;
    }
}
