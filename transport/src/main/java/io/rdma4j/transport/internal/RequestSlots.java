package io.rdma4j.transport.internal;

import io.rdma4j.transport.TransportException;

/**
 * The request slots every provider keeps: a fixed pool in parallel primitive arrays, so posting
 * and completing a request allocates nothing. A request id is {@code generation << 32 | slot}:
 * the generation changes whenever a slot is released, so a stale id (tested twice, or one a peer
 * made up) never matches a reused slot, and no id is 0. A provider subclasses this with the
 * arrays of its own per-request details. Not thread-safe: the transport's lock guards it.
 */
public abstract class RequestSlots {
    /**
     * Slot states: free; posted and in flight ({@code ACTIVE}; states above {@code FAILED} are a
     * provider's sub-states of it); finished with {@link #transferred} or with {@link #error},
     * reported when the id is tested.
     */
    public static final int FREE = 0, ACTIVE = 1, DONE = 2, FAILED = 3;
    /** Request kinds. */
    public static final int SEND = 1, RECV = 2, WRITE = 3, READ = 4;

    public final int capacity;
    public final int[] state;
    public final int[] kind;
    public final int[] generation;
    public final int[] peer;
    public final int[] tag;
    /** Send: bytes to send; receive: capacity offered; write/read: bytes. */
    public final long[] length;
    /** Bytes moved so far while in flight (where a provider streams); the result once done. */
    public final long[] transferred;
    public final TransportException[] error;
    private final int[] freeSlots;
    private int freeCount;

    protected RequestSlots(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("request table capacity " + capacity + " must be at least 1");
        }
        this.capacity = capacity;
        state = new int[capacity];
        kind = new int[capacity];
        generation = new int[capacity];
        peer = new int[capacity];
        tag = new int[capacity];
        length = new long[capacity];
        transferred = new long[capacity];
        error = new TransportException[capacity];
        freeSlots = new int[capacity];
        for (int i = 0; i < capacity; i++) {
            freeSlots[i] = capacity - 1 - i;
            generation[i] = 1; // so that no id is 0
        }
        freeCount = capacity;
    }

    /** Drops the provider's references (buffers, mappings) of a slot that finished or was freed. */
    protected abstract void forget(int slot);

    /**
     * Takes a slot for a new {@link #ACTIVE} request; the caller fills in its own details and
     * then hands out {@link #id(int)}.
     *
     * @throws TransportException naming {@code peer} when all {@link #capacity} slots are in use
     */
    protected final int take(int kind, int peer, long length) {
        if (freeCount == 0) {
            throw new TransportException(peer, "too many outstanding requests (" + capacity
                    + "); test completed ones or raise RDMA4J_MAX_REQUESTS");
        }
        int s = freeSlots[--freeCount];
        state[s] = ACTIVE;
        this.kind[s] = kind;
        this.peer[s] = peer;
        tag[s] = 0;
        this.length[s] = length;
        transferred[s] = 0;
        error[s] = null;
        return s;
    }

    public final long id(int slot) {
        return ((long) generation[slot] << 32) | slot;
    }

    /** The slot of the live request {@code id}, else -1. */
    public final int slot(long id) {
        int s = (int) id;
        if (s < 0 || s >= capacity || state[s] == FREE || generation[s] != (int) (id >>> 32)) {
            return -1;
        }
        return s;
    }

    /** The slot of {@code id} if that request is still pending, else -1. */
    public final int pendingSlot(long id) {
        int s = slot(id);
        return s >= 0 && pending(s) ? s : -1;
    }

    public final boolean pending(int slot) {
        int st = state[slot];
        return st == ACTIVE || st > FAILED;
    }

    /** A pending request finished with {@code bytes} transferred; no-op once it finished. */
    public final void complete(int slot, long bytes) {
        if (pending(slot)) {
            state[slot] = DONE;
            transferred[slot] = bytes;
            forget(slot);
        }
    }

    /** A pending request failed; no-op once it finished. */
    public final void fail(int slot, TransportException e) {
        if (pending(slot)) {
            state[slot] = FAILED;
            error[slot] = e;
            forget(slot);
        }
    }

    /** Fails a pending request with an error that names it and its peer, saying {@code why}. */
    public final void fail(int slot, String why, Throwable cause) {
        fail(slot, new TransportException(peer[slot], describe(slot) + " failed: " + why, cause));
    }

    /**
     * Fails every pending request to {@code peer} (every peer if it is negative), each with an
     * error that names its operation and carries {@code cause}, blaming the rank the cause blames
     * (its peer unless the cause names another).
     */
    public final void failPending(int peer, TransportException cause) {
        for (int s = 0; s < capacity; s++) {
            if ((peer < 0 || this.peer[s] == peer) && pending(s)) {
                // the cause may blame another rank than the slot's peer: the one that peer lost first
                int culprit = cause.peer() >= 0 ? cause.peer() : this.peer[s];
                fail(s, new TransportException(culprit, describe(s) + " failed: " + cause.getMessage(), cause));
            }
        }
    }

    /** Frees a slot whose outcome was reported; its id becomes stale. */
    public final void release(int slot) {
        state[slot] = FREE;
        error[slot] = null;
        forget(slot);
        int g = (generation[slot] + 1) & 0x7FFFFFFF;
        generation[slot] = g == 0 ? 1 : g;
        freeSlots[freeCount++] = slot;
    }

    public final int inUse() {
        return capacity - freeCount;
    }

    /** Whether request {@code s} is a send or a receive, which pair with the peer's by the order they were issued. */
    public final boolean twoSided(int s) {
        return kind[s] == SEND || kind[s] == RECV;
    }

    /**
     * Why a connection fails when the buffer of its pending request {@code s} is closed: the
     * peer may hold that request's CTS or message already, so no later send or receive of the
     * connection could pair right.
     */
    public final TransportException closedUnderPending(int s) {
        return new TransportException(peer[s], "the buffer of " + describe(s) + " was closed while it was pending, "
                + "so the sends and receives to and from peer " + peer[s] + " no longer pair up");
    }

    /** The request as an error message names it, e.g. "isend of 8 bytes (tag 3) to peer 1". */
    public final String describe(int s) {
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
