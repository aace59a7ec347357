package io.rdma4j.transport.tcp;

import io.rdma4j.transport.internal.RequestSlots;

/** The TCP provider's requests: the shared slots plus what its frames need. */
final class RequestTable extends RequestSlots {
    /** A receive or read whose payload is arriving (a sub-state of pending). */
    static final int RECEIVING = FAILED + 1;

    final TcpBuffer[] buffer;
    final long[] offset;
    /** SEND: the matched receive's id at the peer, -1 until the receiver's CTS matched it. WRITE/READ: the remote region key. */
    final long[] remoteId;
    /** WRITE/READ: the offset in the remote region. */
    final long[] remoteOffset;
    final long[] immediate;
    /**
     * Next request in its connection's queue, -1 at the end: SEND, the sends waiting for a CTS;
     * RECV, the posted receives that no message has claimed yet.
     */
    final int[] next;
    /** SEND that went eagerly: which of {@link #STAGED} and {@link #CTS_SEEN} happened; 0 for a rendezvous send. */
    final int[] eager;
    /** SEND that went eagerly: the capacity its receive offered, once its CTS arrived. */
    final long[] offered;

    static final int EAGER = 1;
    /** The eager payload was copied into the staging buffer: the source may be reused. */
    static final int STAGED = 2;
    /** The receive's CTS arrived: a receive took the message (or refused it, being too small). */
    static final int CTS_SEEN = 4;

    RequestTable(int capacity) {
        super(capacity);
        buffer = new TcpBuffer[capacity];
        offset = new long[capacity];
        remoteId = new long[capacity];
        remoteOffset = new long[capacity];
        immediate = new long[capacity];
        next = new int[capacity];
        eager = new int[capacity];
        offered = new long[capacity];
    }

    /** Takes a slot; the caller fills in the rest and then calls {@link #id(int)}. */
    int allocate(int kind, int peer, TcpBuffer buffer, long offset, long length) {
        int s = take(kind, peer, length);
        this.buffer[s] = buffer;
        this.offset[s] = offset;
        remoteId[s] = -1;
        next[s] = -1;
        eager[s] = 0;
        return s;
    }

    /** The slot of {@code id} if it is a request of {@code kind} to {@code peer} in {@code expected} state, else -1. */
    int slot(long id, int kind, int peer, int expected) {
        int s = slot(id);
        return s >= 0 && this.kind[s] == kind && this.peer[s] == peer && state[s] == expected ? s : -1;
    }

    @Override
    protected void forget(int slot) {
        buffer[slot] = null;
    }
}
