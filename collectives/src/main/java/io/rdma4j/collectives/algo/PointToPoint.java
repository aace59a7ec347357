package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.Descriptor;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Ops;
import io.rdma4j.collectives.core.Staging;

/**
 * Send or receive between two ranks, on lanes of their own so that point-to-point traffic never
 * matches a collective's. Both sides exchange descriptors (type, count and a per-pair sequence
 * number) first, so a receive that does not match the send fails on both; the receive is posted
 * at once, the payload leaves once the receiver's descriptor matched.
 */
public final class PointToPoint extends CollectiveOp {
    private Group g;
    private Staging staging;
    private Descriptor identity;
    private Call c;
    private boolean isSend;
    private final int[] peer = new int[1];
    private long req;
    private boolean issued;

    @Override
    public Descriptor identity() {
        return identity;
    }

    public void prepare(Group g, Staging staging, CollectiveOptions o, Call c, boolean isSend, int peer) {
        this.g = g;
        this.staging = staging;
        this.identity = c.identity;
        this.c = c;
        this.isSend = isSend;
        this.peer[0] = peer;
        hs.copyFrom(c.identity);
        issued = false;
        req = Ops.NONE;
    }

    @Override
    public void start() {
        beginHandshake(g, staging, peer, 1, Group.LANE_P2P_CONTROL);
        long bytes = c.count * c.elemBytes();
        if (!isSend && bytes > 0) {
            req = Ops.recv(g, peer[0], c.recv, c.recvOff, bytes, g.tag(Group.LANE_P2P_DATA));
        }
        issued = !isSend;
    }

    @Override
    public boolean step() {
        int before = handshakePending();
        boolean ready = handshakeReceived();
        handshakeSent();
        boolean p = before != handshakePending();
        if (ready && !issued) {
            long bytes = c.count * c.elemBytes();
            if (bytes > 0) {
                req = Ops.send(g, peer[0], c.send, c.sendOff, bytes, g.tag(Group.LANE_P2P_DATA));
            }
            issued = true;
            p = true;
        }
        if (req != Ops.NONE && Ops.done(g, peer[0], req)) {
            req = Ops.NONE;
            p = true;
        }
        return p;
    }

    @Override
    public boolean isDone() {
        return issued && req == Ops.NONE && handshakePending() == 0;
    }

    @Override
    public int waitingFor() {
        return g.worldRank(peer[0]);
    }
}
