package io.rdma4j.transport.shm;

import java.util.Arrays;

/**
 * The clear-to-send entries a sender has taken off a receiver's CTS ring and not yet matched to
 * a send, oldest first. Entries are matched by tag, so one may leave from the middle; the ring
 * itself must be consumed in order, hence this local copy. A receiver also queues here the
 * entries its ring had no room for yet, and publishes them oldest first. Storage grows by doubling up to the
 * receiver's request table size (only while the connection warms up), then never allocates again.
 */
final class CtsQueue {
    private final int maxCapacity;
    private long[] recvId;
    private long[] capacity;
    private int[] tag;
    private int[] kind;
    private long[] region;
    private long[] address;
    private int[] next;
    private int[] free;
    private int freeCount;
    private int head = -1;
    private int tail = -1;

    CtsQueue(int initialCapacity, int maxCapacity) {
        this.maxCapacity = maxCapacity;
        int n = Math.min(initialCapacity, maxCapacity);
        recvId = new long[n];
        capacity = new long[n];
        tag = new int[n];
        kind = new int[n];
        region = new long[n];
        address = new long[n];
        next = new int[n];
        free = new int[n];
        addFree(0, n);
    }

    /** Whether another entry fits. */
    boolean hasRoom() {
        return freeCount > 0 || recvId.length < maxCapacity;
    }

    void add(long entryRecvId, long entryCapacity, int entryTag, int entryKind, long entryRegion, long entryAddress) {
        if (freeCount == 0) {
            grow();
        }
        int e = free[--freeCount];
        recvId[e] = entryRecvId;
        capacity[e] = entryCapacity;
        tag[e] = entryTag;
        kind[e] = entryKind;
        region[e] = entryRegion;
        address[e] = entryAddress;
        next[e] = -1;
        if (tail < 0) {
            head = e;
        } else {
            next[tail] = e;
        }
        tail = e;
    }

    /**
     * Removes the oldest entry for {@code wanted} and copies it into the send's slot of
     * {@code requests}; false when no entry has that tag.
     */
    boolean takeInto(int wanted, RequestTable requests, int slot) {
        int previous = -1;
        for (int e = head; e >= 0; previous = e, e = next[e]) {
            if (tag[e] == wanted) {
                requests.ctsRecvId[slot] = recvId[e];
                requests.ctsCapacity[slot] = capacity[e];
                requests.ctsKind[slot] = kind[e];
                requests.ctsRegion[slot] = region[e];
                requests.ctsAddress[slot] = address[e];
                unlink(e, previous);
                return true;
            }
        }
        return false;
    }

    boolean isEmpty() {
        return head < 0;
    }

    /** The oldest entry, for a queue of entries still to publish; -1 when empty. */
    int first() {
        return head;
    }

    long recvId(int e) {
        return recvId[e];
    }

    long capacity(int e) {
        return capacity[e];
    }

    int tag(int e) {
        return tag[e];
    }

    int kind(int e) {
        return kind[e];
    }

    long region(int e) {
        return region[e];
    }

    long address(int e) {
        return address[e];
    }

    void removeFirst() {
        unlink(head, -1);
    }

    boolean contains(long wantedRecvId) {
        for (int e = head; e >= 0; e = next[e]) {
            if (recvId[e] == wantedRecvId) {
                return true;
            }
        }
        return false;
    }

    /** Removes the entry of receive {@code wantedRecvId}, if there is one. */
    void remove(long wantedRecvId) {
        for (int e = head, previous = -1; e >= 0; previous = e, e = next[e]) {
            if (recvId[e] == wantedRecvId) {
                unlink(e, previous);
                return;
            }
        }
    }

    void clear() {
        while (head >= 0) {
            unlink(head, -1);
        }
    }

    private void unlink(int e, int previous) {
        int after = next[e];
        if (previous < 0) {
            head = after;
        } else {
            next[previous] = after;
        }
        if (tail == e) {
            tail = previous;
        }
        free[freeCount++] = e;
    }

    private void grow() {
        int old = recvId.length;
        int n = Math.min(old * 2, maxCapacity);
        if (n <= old) {
            throw new IllegalStateException("more than " + maxCapacity + " clear-to-send entries outstanding");
        }
        recvId = Arrays.copyOf(recvId, n);
        capacity = Arrays.copyOf(capacity, n);
        tag = Arrays.copyOf(tag, n);
        kind = Arrays.copyOf(kind, n);
        region = Arrays.copyOf(region, n);
        address = Arrays.copyOf(address, n);
        next = Arrays.copyOf(next, n);
        free = Arrays.copyOf(free, n);
        addFree(old, n);
    }

    private void addFree(int from, int to) {
        for (int i = to - 1; i >= from; i--) {
            free[freeCount++] = i;
        }
    }
}
