package io.rdma4j.collectives.core;

import io.rdma4j.collectives.CollectiveException;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.SharedWindow;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportException;

import java.lang.foreign.MemorySegment;

/**
 * Transport calls as algorithms make them: on group ranks, with every transport failure turned
 * into a {@link PeerFailure} that names the peer's world rank.
 */
public final class Ops {
    /** Marks "no request" in request-id arrays (a chunk of zero bytes sends nothing). */
    public static final long NONE = Long.MIN_VALUE;

    private Ops() {
    }

    public static long send(Group g, int peer, RegisteredBuffer buf, long off, long len, int tag) {
        try {
            return g.connection(peer).isend(buf, off, len, tag);
        } catch (TransportException e) {
            throw peerFailure(g, peer, "send to", e);
        }
    }

    public static long recv(Group g, int peer, RegisteredBuffer buf, long off, long cap, int tag) {
        try {
            return g.connection(peer).irecv(buf, off, cap, tag);
        } catch (TransportException e) {
            throw peerFailure(g, peer, "receive from", e);
        }
    }

    /** {@link Transport#test}; {@link Transport#PENDING} while in flight. */
    public static long test(Group g, int peer, long req) {
        try {
            return g.transport().test(req);
        } catch (TransportException e) {
            throw peerFailure(g, peer, "request to/from", e);
        }
    }

    /** Tests {@code req} unless it is {@link #NONE}; true once complete. */
    public static boolean done(Group g, int peer, long req) {
        return req == NONE || test(g, peer, req) != Transport.PENDING;
    }

    /** The shared window of group rank {@code peer} ({@link SharedWindow#peer}). */
    public static MemorySegment window(Group g, SharedWindow w, int peer) {
        try {
            return w.peer(g.transportRank(peer));
        } catch (TransportException e) {
            throw peerFailure(g, peer, "shared window of", e);
        }
    }

    /** {@link SharedWindow#checkPeer} of group rank {@code peer}. */
    public static void checkPeer(Group g, SharedWindow w, int peer) {
        try {
            w.checkPeer(g.transportRank(peer));
        } catch (TransportException e) {
            throw peerFailure(g, peer, "waiting for", e);
        }
    }

    public static void flush(Group g, int peer) {
        try {
            g.connection(peer).flush();
        } catch (TransportException e) {
            throw peerFailure(g, peer, "flush to", e);
        }
    }

    static CollectiveException peerFailure(Group g, int peer, String what, TransportException e) {
        int culprit = peer;
        if (e.peer() >= 0) {
            int gr = g.groupRankOfTransportRank(e.peer());
            if (gr >= 0) {
                culprit = gr;
            }
        }
        int w = g.worldRank(culprit);
        return new PeerFailure(w, "rank " + g.worldRank(g.rank()) + ": " + what + " rank " + w + " failed ("
                + g.transport().provider() + "): " + e.getMessage(), e);
    }

    /** A transport-level failure attributed to a peer (the fault board reports it as RANK_FAILED). */
    public static final class PeerFailure extends CollectiveException {
        PeerFailure(int rank, String message, Throwable cause) {
            super(rank, message, cause);
        }
    }
}
