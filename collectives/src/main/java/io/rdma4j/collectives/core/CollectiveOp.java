package io.rdma4j.collectives.core;

import io.rdma4j.collectives.CollectiveMismatchException;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.Transport;

/**
 * Base of every algorithm: a non-blocking state machine that {@link Engine#drive} steps until it
 * is done. It owns the descriptor handshake (each op first exchanges its {@link Descriptor} with
 * every peer it will talk to, in both directions, and sends no payload before the peers'
 * descriptors have been checked), and wraps transport calls so that a failure names the peer's
 * world rank. Instances are reused across calls; nothing here allocates per call.
 */
public abstract class CollectiveOp {
    /** Marks "no request" in request-id arrays (a chunk of zero bytes sends nothing). */
    protected static final long NONE = Ops.NONE;

    /** Handshake descriptor (what this op checks with its peers). */
    protected final Descriptor hs = new Descriptor();
    private int[] hsPeers = new int[8];
    private long[] hsRecv = new long[8];
    private long[] hsSend = new long[8];
    private int hsCount;
    private int hsRecvLeft;
    private int hsSendLeft;
    private Group hsGroup;
    private RegisteredBuffer control;

    /** The descriptor that identifies the user-visible collective (for stall reports). */
    public abstract Descriptor identity();

    /** Posts the first requests. */
    public abstract void start();

    /** Polls and advances; returns whether anything happened. */
    public abstract boolean step();

    /** Whether every request of this op has completed (buffers may be reused). */
    public abstract boolean isDone();

    /** The world rank this op is currently blocked on, -1 if unknown (diagnostics). */
    public abstract int waitingFor();

    /**
     * Sleeps until the peer this op waits for may have moved, at most {@code nanos}; returns false
     * at once where the op cannot (the engine then idles as usual). Only ops whose peers can wake
     * them (shared-window ops) override it.
     */
    public boolean sleep(long nanos) {
        return false;
    }

    // ---- handshake -------------------------------------------------------------------------

    /** Starts exchanging {@link #hs} with {@code peers[0..count)} (distinct group ranks). */
    protected final void beginHandshake(Group g, Staging staging, int[] peers, int count) {
        beginHandshake(g, staging, peers, count, Group.LANE_CONTROL);
    }

    /** As {@link #beginHandshake(Group, Staging, int[], int)} on another lane (point-to-point). */
    protected final void beginHandshake(Group g, Staging staging, int[] peers, int count, int lane) {
        if (hsPeers.length < count) {
            hsPeers = new int[count];
            hsRecv = new long[count];
            hsSend = new long[count];
        }
        hsGroup = g;
        hsCount = count;
        hs.sender = g.worldRank(g.rank());
        control = staging.control(count + 1);
        hs.write(control.segment(), 0);
        int tag = g.tag(lane);
        for (int i = 0; i < count; i++) {
            int p = peers[i];
            hsPeers[i] = p;
            hsRecv[i] = Ops.recv(g, p, control, (long) (i + 1) * Descriptor.CONTROL_SLOT, Descriptor.CONTROL_SLOT, tag);
        }
        for (int i = 0; i < count; i++) {
            hsSend[i] = Ops.send(g, hsPeers[i], control, 0, Descriptor.BYTES, tag);
        }
        hsRecvLeft = count;
        hsSendLeft = count;
    }

    /** Polls the handshake receives; true once every peer's descriptor arrived and matched. */
    protected final boolean handshakeReceived() {
        if (hsRecvLeft == 0) {
            return true;
        }
        for (int i = 0; i < hsCount; i++) {
            if (hsRecv[i] == NONE) {
                continue;
            }
            long n = Ops.test(hsGroup, hsPeers[i], hsRecv[i]);
            if (n == Transport.PENDING) {
                continue;
            }
            hsRecv[i] = NONE;
            hsRecvLeft--;
            long off = (long) (i + 1) * Descriptor.CONTROL_SLOT;
            if (!hs.matches(control.segment(), off, n)) {
                throw mismatch(hsGroup, hsPeers[i], Descriptor.read(control.segment(), off, n));
            }
        }
        return hsRecvLeft == 0;
    }

    /** Polls the handshake sends; true once all completed. */
    protected final boolean handshakeSent() {
        if (hsSendLeft == 0) {
            return true;
        }
        for (int i = 0; i < hsCount; i++) {
            if (hsSend[i] != NONE && Ops.test(hsGroup, hsPeers[i], hsSend[i]) != Transport.PENDING) {
                hsSend[i] = NONE;
                hsSendLeft--;
            }
        }
        return hsSendLeft == 0;
    }

    /** Handshake requests still outstanding (a change means progress). */
    protected final int handshakePending() {
        return hsRecvLeft + hsSendLeft;
    }

    /** A peer whose descriptor has not arrived yet (diagnostics), else -1 (world rank). */
    protected final int handshakeWaitingFor() {
        for (int i = 0; i < hsCount; i++) {
            if (hsRecv[i] != NONE) {
                return hsGroup.worldRank(hsPeers[i]);
            }
        }
        return -1;
    }

    /** Checks a descriptor that arrived outside the handshake (barrier rounds). */
    protected final void validate(Group g, int peer, java.lang.foreign.MemorySegment s, long off, long received) {
        if (!hs.matches(s, off, received)) {
            throw mismatch(g, peer, Descriptor.read(s, off, received));
        }
    }

    /** The mismatch error for a peer whose control message at {@code off} did not match. */
    protected final CollectiveMismatchException mismatch(Group g, int peer, java.lang.foreign.MemorySegment s, long off,
                                                         long received) {
        return mismatch(g, peer, Descriptor.read(s, off, received));
    }

    /** The mismatch error for a peer whose descriptor {@code theirs} (null: unrecognised) is not this call's. */
    protected final CollectiveMismatchException mismatch(Group g, int peer, Descriptor theirs) {
        int w = g.worldRank(peer);
        String them = theirs == null ? "an unrecognised message (not a collective descriptor)" : theirs.toString();
        return new CollectiveMismatchException(w, "collective mismatch: rank " + g.worldRank(g.rank()) + " called "
                + hs + " but rank " + w + " called " + them);
    }
}
