package io.rdma4j.transport.tcp;

import io.rdma4j.transport.TransportException;

/**
 * A fixed pool of request slots in parallel arrays. A request id is {@code generation << 32 |
 * slot}: primitive, and a stale id (already tested, or one a peer made up) never matches a reused
 * slot. Not thread-safe: the transport's lock guards it.
 */
final class RequestTable {
    static final int FREE = 0;
    /** Posted; for a send, {@link #remoteId} is -1 until the receiver's CTS matched it. */
    static final int ACTIVE = 1;
    /** Its payload is arriving. */
    static final int RECEIVING = 2;
    static final int DONE = 3;
    static final int FAILED = 4;

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
    final TcpBuffer[] buffer;
    final long[] offset;
    final long[] length;
    final long[] transferred;
    /** SEND: the matched receive's id at the peer. WRITE/READ: the remote region key. */
    final long[] remoteId;
    /** WRITE/READ: the offset in the remote region. */
    final long[] remoteOffset;
    final long[] immediate;
    /** Next pending send of the same connection (waiting for a CTS), -1 at the end. */
    final int[] next;
    final TransportException[] error;
    private final int[] freeSlots;
    private int freeCount;

    RequestTable(int capacity) {
        this.capacity = capacity;
        state = new int[capacity];
        kind = new int[capacity];
        generation = new int[capacity];
        peer = new int[capacity];
        tag = new int[capacity];
        buffer = new TcpBuffer[capacity];
        offset = new long[capacity];
        length = new long[capacity];
        transferred = new long[capacity];
        remoteId = new long[capacity];
        remoteOffset = new long[capacity];
        immediate = new long[capacity];
        next = new int[capacity];
        error = new TransportException[capacity];
        freeSlots = new int[capacity];
        for (int i = 0; i < capacity; i++) {
            freeSlots[i] = capacity - 1 - i;
            generation[i] = 1; // so that no id is 0
        }
        freeCount = capacity;
    }

    /** Takes a slot and returns it; the caller fills it in and then calls {@link #id(int)}. */
    int allocate(int kind, int peer, TcpBuffer buffer, long offset, long length) {
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
        remoteId[s] = -1;
        next[s] = -1;
        error[s] = null;
        return s;
    }

    long id(int slot) {
        return ((long) generation[slot] << 32) | slot;
    }

    /** The slot of a live request {@code id}, else -1. */
    int slot(long id) {
        int s = (int) id;
        if (s < 0 || s >= capacity || state[s] == FREE || generation[s] != (int) (id >>> 32)) {
            return -1;
        }
        return s;
    }

    /** The slot of {@code id} if it is a request of {@code kind} to {@code peer} in {@code expected} state, else -1. */
    int slot(long id, int kind, int peer, int expected) {
        int s = slot(id);
        return s >= 0 && this.kind[s] == kind && this.peer[s] == peer && state[s] == expected ? s : -1;
    }

    void complete(int slot, long bytes) {
        if (state[slot] == ACTIVE || state[slot] == RECEIVING) {
            state[slot] = DONE;
            transferred[slot] = bytes;
            buffer[slot] = null;
        }
    }

    void fail(int slot, TransportException e) {
        if (state[slot] == ACTIVE || state[slot] == RECEIVING) {
            state[slot] = FAILED;
            error[slot] = e;
            buffer[slot] = null;
        }
    }

    boolean pending(int slot) {
        return state[slot] == ACTIVE || state[slot] == RECEIVING;
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
