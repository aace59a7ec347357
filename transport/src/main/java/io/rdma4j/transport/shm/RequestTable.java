package io.rdma4j.transport.shm;

import java.lang.foreign.MemorySegment;

/**
 * The fixed table of a transport's requests, in parallel primitive arrays so that posting and
 * completing a request allocates nothing. A request id is {@code generation << 20 | slot}: the
 * generation changes every time a slot is released, so a stale id (tested twice, or after the
 * slot was reused) is detected instead of reporting another request's result.
 *
 * <p>The per-kind fields (clear-to-send details for sends, the peer location and immediate of
 * writes and reads) live here
 * too; {@link #next} links a slot into at most one of its connection's queues at a time.
 */
final class RequestTable {
    static final int MAX_CAPACITY = 1 << 20;
    private static final int SLOT_BITS = 20;
    private static final long SLOT_MASK = (1L << SLOT_BITS) - 1;
    private static final long GENERATION_MASK = (1L << (63 - SLOT_BITS)) - 1;

    static final byte FREE = 0;
    static final byte PENDING = 1;
    static final byte DONE = 2;
    static final byte FAILED = 3;

    static final byte SEND = 1;
    static final byte RECV = 2;
    static final byte WRITE = 3;
    static final byte READ = 4;

    final int capacity;
    final long[] generation;
    final byte[] state;
    final byte[] kind;
    final int[] peer;
    final int[] tag;
    /** Send: bytes to send; receive: capacity offered; write/read: bytes. */
    final long[] length;
    /** Bytes sent or received so far (bounce-buffer streaming). */
    final long[] done;
    final MemorySegment[] segment;
    final long[] segmentOffset;
    // Write/read: the peer's mapped slab and the offset in it; whether the data was copied yet.
    final MemorySegment[] remote;
    final long[] remoteAddress;
    final boolean[] placed;
    final long[] immediate;
    final int[] next;
    final String[] failure;
    final Throwable[] cause;
    // Send: the matched clear-to-send (CTS) entry of the receiver; receive: the CTS entry to publish.
    final long[] ctsRecvId;
    final long[] ctsCapacity;
    final int[] ctsKind;
    final long[] ctsRegion;
    final long[] ctsAddress;

    private final int[] freeSlots;
    private int freeCount;

    RequestTable(int capacity) {
        if (capacity < 1 || capacity > MAX_CAPACITY) {
            throw new IllegalArgumentException("request table capacity " + capacity + " outside [1, " + MAX_CAPACITY + "]");
        }
        this.capacity = capacity;
        generation = new long[capacity];
        state = new byte[capacity];
        kind = new byte[capacity];
        peer = new int[capacity];
        tag = new int[capacity];
        length = new long[capacity];
        done = new long[capacity];
        segment = new MemorySegment[capacity];
        segmentOffset = new long[capacity];
        remote = new MemorySegment[capacity];
        remoteAddress = new long[capacity];
        placed = new boolean[capacity];
        immediate = new long[capacity];
        next = new int[capacity];
        failure = new String[capacity];
        cause = new Throwable[capacity];
        ctsRecvId = new long[capacity];
        ctsCapacity = new long[capacity];
        ctsKind = new int[capacity];
        ctsRegion = new long[capacity];
        ctsAddress = new long[capacity];
        freeSlots = new int[capacity];
        for (int i = 0; i < capacity; i++) {
            freeSlots[i] = capacity - 1 - i;
        }
        freeCount = capacity;
    }

    /** A pending slot for a new request, or -1 when all {@link #capacity} are in use. */
    int acquire(byte requestKind, int requestPeer, int requestTag, MemorySegment seg, long offset, long bytes) {
        if (freeCount == 0) {
            return -1;
        }
        int slot = freeSlots[--freeCount];
        state[slot] = PENDING;
        kind[slot] = requestKind;
        peer[slot] = requestPeer;
        tag[slot] = requestTag;
        segment[slot] = seg;
        segmentOffset[slot] = offset;
        length[slot] = bytes;
        done[slot] = 0;
        placed[slot] = false;
        next[slot] = -1;
        return slot;
    }

    long id(int slot) {
        return (generation[slot] << SLOT_BITS) | slot;
    }

    /** The slot of a live request id, or -1 for an id that is unknown, released or reused. */
    int slotOf(long id) {
        if (id < 0) {
            return -1;
        }
        long slot = id & SLOT_MASK;
        if (slot >= capacity || state[(int) slot] == FREE || generation[(int) slot] != (id >>> SLOT_BITS)) {
            return -1;
        }
        return (int) slot;
    }

    void complete(int slot, long bytes) {
        state[slot] = DONE;
        done[slot] = bytes;
        segment[slot] = null;
        remote[slot] = null;
    }

    void fail(int slot, String message, Throwable why) {
        state[slot] = FAILED;
        failure[slot] = message;
        cause[slot] = why;
        segment[slot] = null;
        remote[slot] = null;
    }

    /** Frees a slot whose outcome was reported; its id becomes stale. */
    void release(int slot) {
        state[slot] = FREE;
        segment[slot] = null;
        remote[slot] = null;
        failure[slot] = null;
        cause[slot] = null;
        generation[slot] = (generation[slot] + 1) & GENERATION_MASK;
        freeSlots[freeCount++] = slot;
    }

    int inUse() {
        return capacity - freeCount;
    }

    static String kindName(byte k) {
        return switch (k) {
            case SEND -> "isend";
            case RECV -> "irecv";
            case WRITE -> "write";
            case READ -> "read";
            default -> "request";
        };
    }
}
