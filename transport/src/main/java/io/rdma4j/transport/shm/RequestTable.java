package io.rdma4j.transport.shm;

import io.rdma4j.transport.internal.RequestSlots;

import java.lang.foreign.MemorySegment;

/**
 * The shm provider's requests: the shared slots plus the per-kind details (clear-to-send details
 * for sends, the peer location and immediate of writes and reads); {@link #next} links a slot
 * into at most one of its connection's queues at a time. {@link #transferred} counts the bytes
 * streamed so far through the bounce buffer.
 */
final class RequestTable extends RequestSlots {
    static final int MAX_CAPACITY = 1 << 20;

    final MemorySegment[] segment;
    final long[] segmentOffset;
    // Write/read: the peer's mapped slab and the offset in it; whether the data was copied yet.
    final MemorySegment[] remote;
    final long[] remoteAddress;
    /** Write/read: the peer's region key, resolved again just before the copy (the peer may have freed it since). */
    final long[] remoteKey;
    final boolean[] placed;
    final long[] immediate;
    final int[] next;
    // Send: the matched clear-to-send (CTS) entry of the receiver; receive: the CTS entry to publish.
    final long[] ctsRecvId;
    final long[] ctsCapacity;
    final int[] ctsKind;
    final long[] ctsRegion;
    final long[] ctsAddress;

    RequestTable(int capacity) {
        super(checked(capacity));
        segment = new MemorySegment[capacity];
        segmentOffset = new long[capacity];
        remote = new MemorySegment[capacity];
        remoteAddress = new long[capacity];
        remoteKey = new long[capacity];
        placed = new boolean[capacity];
        immediate = new long[capacity];
        next = new int[capacity];
        ctsRecvId = new long[capacity];
        ctsCapacity = new long[capacity];
        ctsKind = new int[capacity];
        ctsRegion = new long[capacity];
        ctsAddress = new long[capacity];
    }

    private static int checked(int capacity) {
        if (capacity < 1 || capacity > MAX_CAPACITY) {
            throw new IllegalArgumentException("request table capacity " + capacity + " outside [1, " + MAX_CAPACITY + "]");
        }
        return capacity;
    }

    /**
     * A pending slot for a new request.
     *
     * @throws io.rdma4j.transport.TransportException naming the peer when all {@link #capacity} are in use
     */
    int acquire(int requestKind, int requestPeer, int requestTag, MemorySegment seg, long offset, long bytes) {
        int slot = take(requestKind, requestPeer, bytes);
        tag[slot] = requestTag;
        segment[slot] = seg;
        segmentOffset[slot] = offset;
        placed[slot] = false;
        next[slot] = -1;
        return slot;
    }

    @Override
    protected void forget(int slot) {
        segment[slot] = null;
        remote[slot] = null;
    }
}
