package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.Descriptor;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Ops;
import io.rdma4j.collectives.core.Staging;

/**
 * All-to-all: every receive is posted at once straight into its block of the receive buffer,
 * then block p of the send buffer goes to rank p, in the order r+1, r+2, ... so that no rank is
 * everybody's first target. The caller copies this rank's own block.
 */
public final class PairwiseAllToAll extends CollectiveOp {
    private Group g;
    private Staging staging;
    private Descriptor identity;
    private Call c;
    private int[] peers = new int[0];
    private long[] rreq = new long[0];
    private long[] sreq = new long[0];
    private int pendingRecv;
    private int pendingSend;
    private boolean sent;
    private int tag;

    @Override
    public Descriptor identity() {
        return identity;
    }

    public void prepare(Group g, Staging staging, CollectiveOptions o, Call c) {
        this.g = g;
        this.staging = staging;
        this.identity = c.identity;
        this.c = c;
        hs.copyFrom(c.identity);
        int n = g.size();
        if (peers.length != n - 1) {
            peers = new int[n - 1];
            rreq = new long[n - 1];
            sreq = new long[n - 1];
        }
        for (int s = 1; s < n; s++) {
            peers[s - 1] = (g.rank() + s) % n;
        }
        tag = g.tag(Group.LANE_DATA);
        sent = false;
    }

    @Override
    public void start() {
        beginHandshake(g, staging, peers, peers.length);
        long bytes = c.count * c.elemBytes();
        int n = g.size();
        pendingRecv = 0;
        for (int i = 0; i < peers.length; i++) {
            int from = (g.rank() - 1 - i + n) % n;
            rreq[i] = bytes == 0 ? Ops.NONE : Ops.recv(g, from, c.recv, c.recvOff + from * bytes, bytes, tag);
            pendingRecv += bytes == 0 ? 0 : 1;
        }
        pendingSend = 0;
    }

    @Override
    public boolean step() {
        int before = handshakePending();
        boolean ready = handshakeReceived();
        handshakeSent();
        boolean p = before != handshakePending();
        long bytes = c.count * c.elemBytes();
        int n = g.size();
        if (ready && !sent) {
            for (int i = 0; i < peers.length; i++) {
                int to = peers[i];
                sreq[i] = bytes == 0 ? Ops.NONE : Ops.send(g, to, c.send, c.sendOff + to * bytes, bytes, tag);
                pendingSend += bytes == 0 ? 0 : 1;
            }
            sent = true;
            p = true;
        }
        for (int i = 0; i < peers.length; i++) {
            if (rreq[i] != Ops.NONE && Ops.done(g, (g.rank() - 1 - i + n) % n, rreq[i])) {
                rreq[i] = Ops.NONE;
                pendingRecv--;
                p = true;
            }
            if (sent && sreq[i] != Ops.NONE && Ops.done(g, peers[i], sreq[i])) {
                sreq[i] = Ops.NONE;
                pendingSend--;
                p = true;
            }
        }
        return p;
    }

    @Override
    public boolean isDone() {
        return sent && pendingRecv == 0 && pendingSend == 0 && handshakePending() == 0;
    }

    @Override
    public int waitingFor() {
        int w = handshakeWaitingFor();
        if (w >= 0) {
            return w;
        }
        int n = g.size();
        for (int i = 0; i < peers.length; i++) {
            if (rreq[i] != Ops.NONE) {
                return g.worldRank((g.rank() - 1 - i + n) % n);
            }
        }
        for (int i = 0; i < peers.length; i++) {
            if (sreq[i] != Ops.NONE) {
                return g.worldRank(peers[i]);
            }
        }
        return -1;
    }
}
