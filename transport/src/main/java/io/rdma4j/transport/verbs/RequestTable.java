package io.rdma4j.transport.verbs;

import io.rdma4j.transport.TransportException;

/**
 * The verbs provider's requests, as a fixed pool of slots in parallel arrays. A request id is
 * {@code generation << 32 | slot}, so a stale id never matches a reused slot; the slot (below
 * 2^20) and the low generation bits also travel in immediates and CTS entries. Not thread-safe:
 * the transport's lock guards it.
 */
final class RequestTable {
    static final int FREE = 0;
    static final int ACTIVE = 1;
    static final int DONE = 2;
    static final int FAILED = 3;

    static final int SEND = 1;
    static final int RECV = 2;
    static final int WRITE = 3;
    static final int READ = 4;

    final int capacity;
    final int[] state;
    final int[] kind;
    final int[] generation;
    final int[] peer;
    final int[] tag;
    final VerbsBuffer[] buffer;
    final long[] offset;
    final long[] length;
    final long[] transferred;
    /** SEND: the matched receive's address; WRITE/READ: the remote address. */
    final long[] remoteAddress;
    /** SEND: the matched receive's rkey; WRITE/READ: the remote buffer's rkey. */
    final int[] remoteKey;
    /** SEND: the matched receive's capacity. */
    final long[] remoteCapacity;
    /** SEND: the matched receive's slot and generation, as its immediate wants them. */
    final int[] remoteSlot;
    final int[] remoteGeneration;
    /** WRITE: the immediate, or Connection.NO_IMMEDIATE. */
    final long[] immediate;
    /** Work-request marks (or, for a RECV, data parts) still to come before the request is done. */
    final int[] partsLeft;
    /** Whether the NIC or the peer may still touch the request's buffer (posted, or its CTS sent). */
    final boolean[] exposed;
    /** SEND whose matching receive was too small: fails once its error notice was sent. */
    final boolean[] failWhenRetired;
    final TransportException[] error;
    private final int[] freeSlots;
    private int freeCount;

    RequestTable(int capacity) {
        if (capacity < 1 || capacity > Immediate.MAX_SLOTS) {
            throw new IllegalArgumentException("request table capacity " + capacity + " outside [1, "
                    + Immediate.MAX_SLOTS + "]");
        }
        this.capacity = capacity;
        state = new int[capacity];
        kind = new int[capacity];
        generation = new int[capacity];
        peer = new int[capacity];
        tag = new int[capacity];
        buffer = new VerbsBuffer[capacity];
        offset = new long[capacity];
        length = new long[capacity];
        transferred = new long[capacity];
        remoteAddress = new long[capacity];
        remoteKey = new int[capacity];
        remoteCapacity = new long[capacity];
        remoteSlot = new int[capacity];
        remoteGeneration = new int[capacity];
        immediate = new long[capacity];
        partsLeft = new int[capacity];
        exposed = new boolean[capacity];
        failWhenRetired = new boolean[capacity];
        error = new TransportException[capacity];
        freeSlots = new int[capacity];
        for (int i = 0; i < capacity; i++) {
            freeSlots[i] = capacity - 1 - i;
            generation[i] = 1; // so that no id is 0
        }
        freeCount = capacity;
    }

    /** Takes a slot; the caller fills in the rest and then hands out {@link #id(int)}. */
    int allocate(int kind, int peer, VerbsBuffer buffer, long offset, long length) {
        if (freeCount == 0) {
            throw new TransportException(peer, "too many outstanding requests (" + capacity
                    + "); test completed ones or raise RDMA4J_MAX_REQUESTS");
        }
        int s = freeSlots[--freeCount];
        state[s] = ACTIVE;
        this.kind[s] = kind;
        this.peer[s] = peer;
        this.buffer[s] = buffer;
        this.offset[s] = offset;
        this.length[s] = length;
        transferred[s] = 0;
        partsLeft[s] = 0;
        exposed[s] = false;
        failWhenRetired[s] = false;
        error[s] = null;
        return s;
    }

    long id(int slot) {
        return ((long) generation[slot] << 32) | slot;
    }

    /** The slot of the live request {@code id}, else -1. */
    int slot(long id) {
        int s = (int) id;
        if (s < 0 || s >= capacity || state[s] == FREE || generation[s] != (int) (id >>> 32)) {
            return -1;
        }
        return s;
    }

    /** The slot of {@code id} if that request is still pending, else -1. */
    int pendingSlot(long id) {
        int s = slot(id);
        return s >= 0 && state[s] == ACTIVE ? s : -1;
    }

    boolean pending(int slot) {
        return state[slot] == ACTIVE;
    }

    void complete(int slot, long bytes) {
        if (state[slot] == ACTIVE) {
            state[slot] = DONE;
            transferred[slot] = bytes;
            buffer[slot] = null;
            exposed[slot] = false;
        }
    }

    void fail(int slot, TransportException e) {
        if (state[slot] == ACTIVE) {
            state[slot] = FAILED;
            error[slot] = e;
            buffer[slot] = null;
            exposed[slot] = false;
        }
    }

    void release(int slot) {
        state[slot] = FREE;
        buffer[slot] = null;
        error[slot] = null;
        int g = (generation[slot] + 1) & 0x7FFFFFFF;
        generation[slot] = g == 0 ? 1 : g;
        freeSlots[freeCount++] = slot;
    }

    String describe(int s) {
        String what = switch (kind[s]) {
            case SEND -> "isend of " + length[s] + " bytes (tag " + tag[s] + ") to";
            case RECV -> "irecv of up to " + length[s] + " bytes (tag " + tag[s] + ") from";
            case WRITE -> "one-sided write of " + length[s] + " bytes to";
            case READ -> "one-sided read of " + length[s] + " bytes from";
            default -> "request to";
        };
        return what + " peer " + peer[s];
    }
}
