package io.rdma4j.transport.verbs;

import io.rdma4j.transport.internal.RequestSlots;

/**
 * The verbs provider's requests: the shared slots plus what its work requests need. The slot
 * (below 2^20) and the low generation bits also travel in immediates and CTS entries.
 */
final class RequestTable extends RequestSlots {
    final VerbsBuffer[] buffer;
    final long[] offset;
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
    /** SEND: issued as an eager message before its CTS; done once that CTS arrived and its write completed. */
    final boolean[] eagerSend;
    /** SEND: its receive's CTS arrived, i.e. the peer took it. */
    final boolean[] taken;
    /** RECV: no message has claimed it yet (an arriving eager message may). */
    final boolean[] unclaimed;
    /** RECV: the eager-ring index of the message it takes once its CTS is written, -1 if none. */
    final long[] eagerIndex;
    /**
     * RECV: its CTS is written (into a batch or an eager header). Until then a message it takes
     * waits in {@link #eagerIndex}: the CTS completes the peer's send, so the receive must not
     * complete (and its slot be reused) before the CTS is out.
     */
    final boolean[] ctsWritten;

    RequestTable(int capacity) {
        super(checked(capacity));
        buffer = new VerbsBuffer[capacity];
        offset = new long[capacity];
        remoteAddress = new long[capacity];
        remoteKey = new int[capacity];
        remoteCapacity = new long[capacity];
        remoteSlot = new int[capacity];
        remoteGeneration = new int[capacity];
        immediate = new long[capacity];
        partsLeft = new int[capacity];
        exposed = new boolean[capacity];
        failWhenRetired = new boolean[capacity];
        eagerSend = new boolean[capacity];
        taken = new boolean[capacity];
        unclaimed = new boolean[capacity];
        eagerIndex = new long[capacity];
        ctsWritten = new boolean[capacity];
    }

    private static int checked(int capacity) {
        if (capacity < 1 || capacity > Immediate.MAX_SLOTS) {
            throw new IllegalArgumentException("request table capacity " + capacity + " outside [1, "
                    + Immediate.MAX_SLOTS + "]");
        }
        return capacity;
    }

    /** Takes a slot; the caller fills in the rest and then hands out {@link #id(int)}. */
    int allocate(int kind, int peer, VerbsBuffer buffer, long offset, long length) {
        int s = take(kind, peer, length);
        this.buffer[s] = buffer;
        this.offset[s] = offset;
        partsLeft[s] = 0;
        exposed[s] = false;
        failWhenRetired[s] = false;
        eagerSend[s] = false;
        taken[s] = false;
        unclaimed[s] = false;
        eagerIndex[s] = -1;
        ctsWritten[s] = false;
        return s;
    }

    @Override
    protected void forget(int slot) {
        buffer[slot] = null;
        exposed[slot] = false;
    }
}
