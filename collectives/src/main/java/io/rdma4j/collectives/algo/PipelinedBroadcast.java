package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.Descriptor;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Ops;
import io.rdma4j.collectives.core.Partition;
import io.rdma4j.collectives.core.Staging;
import io.rdma4j.transport.RegisteredBuffer;

/**
 * Broadcast down a tree, chunked and pipelined: a binomial tree for small messages (log2 n
 * hops) and a chain root, root+1, ... for large ones (every rank sends the data once, so the
 * chain runs at link bandwidth once the pipeline is full). Chunks are received straight into the
 * destination buffer and forwarded from there.
 */
public final class PipelinedBroadcast extends CollectiveOp {
    private Group g;
    private Staging staging;
    private Descriptor identity;
    private int parent;
    private int[] kids = new int[8];
    private int nKids;
    private int[] peers = new int[9];
    private int peerCount;
    private RegisteredBuffer buf;
    private long base;
    private long count;
    private int es;
    private int window;
    private int m;
    private int tag;
    private int nextRecv;
    private int recvDone;
    private int sent;
    private int sendDone;
    private long[] rreq = new long[0];
    private long[] sreq = new long[0];

    @Override
    public Descriptor identity() {
        return identity;
    }

    public void prepare(Group g, Staging staging, CollectiveOptions o, Call c, long smallBytes) {
        this.g = g;
        this.staging = staging;
        this.identity = c.identity;
        hs.copyFrom(c.identity);
        int n = g.size();
        int r = g.rank();
        if (kids.length < Trees.maxChildren(n)) {
            kids = new int[Trees.maxChildren(n)];
            peers = new int[kids.length + 1];
        }
        boolean small = c.count * c.elemBytes() <= smallBytes;
        parent = small ? Trees.binomialParent(r, c.root, n) : Trees.chainParent(r, c.root, n);
        nKids = small ? Trees.binomialChildren(r, c.root, n, kids) : Trees.chainChildren(r, c.root, n, kids);
        peerCount = 0;
        if (parent >= 0) {
            peers[peerCount++] = parent;
        }
        for (int i = 0; i < nKids; i++) {
            peers[peerCount++] = kids[i];
        }
        buf = c.recv;
        base = c.recvOff;
        count = c.count;
        es = c.elemBytes();
        window = o.window();
        m = (int) Partition.ceilDiv(count, Math.max(1, o.chunkBytes() / es));
        tag = g.tag(Group.LANE_DATA);
        if (rreq.length < window || sreq.length < window * kids.length) {
            rreq = new long[window];
            sreq = new long[window * kids.length];
        }
        nextRecv = recvDone = sent = sendDone = 0;
        if (parent < 0) {
            nextRecv = recvDone = m; // the root has every chunk
        }
    }

    @Override
    public void start() {
        beginHandshake(g, staging, peers, peerCount);
    }

    @Override
    public boolean step() {
        int before = handshakePending();
        boolean ready = handshakeReceived();
        handshakeSent();
        boolean p = before != handshakePending();
        while (sendDone < sent) {
            int b = (sendDone % window) * kids.length;
            boolean all = true;
            for (int i = 0; i < nKids; i++) {
                if (sreq[b + i] != Ops.NONE) {
                    if (Ops.done(g, kids[i], sreq[b + i])) {
                        sreq[b + i] = Ops.NONE;
                    } else {
                        all = false;
                    }
                }
            }
            if (!all) {
                break;
            }
            sendDone++;
            p = true;
        }
        while (nextRecv < m && nextRecv - recvDone < window) {
            int j = nextRecv;
            long n = Partition.length(count, m, j);
            rreq[j % window] = n == 0 ? Ops.NONE
                    : Ops.recv(g, parent, buf, base + Partition.start(count, m, j) * es, n * es, tag);
            nextRecv++;
            p = true;
        }
        while (recvDone < nextRecv) {
            long id = rreq[recvDone % window];
            if (id != Ops.NONE && !Ops.done(g, parent, id)) {
                break;
            }
            rreq[recvDone % window] = Ops.NONE;
            recvDone++;
            p = true;
        }
        while (ready && nKids > 0 && sent < recvDone && sent - sendDone < window) {
            int j = sent;
            long n = Partition.length(count, m, j);
            long off = base + Partition.start(count, m, j) * es;
            int b = (j % window) * kids.length;
            for (int i = 0; i < nKids; i++) {
                sreq[b + i] = n == 0 ? Ops.NONE : Ops.send(g, kids[i], buf, off, n * es, tag);
            }
            sent++;
            p = true;
        }
        return p;
    }

    @Override
    public boolean isDone() {
        return handshakePending() == 0 && recvDone == m && (nKids == 0 || (sent == m && sendDone == m));
    }

    @Override
    public int waitingFor() {
        int w = handshakeWaitingFor();
        if (w >= 0) {
            return w;
        }
        if (recvDone < m) {
            return g.worldRank(parent);
        }
        return nKids > 0 ? g.worldRank(kids[0]) : -1;
    }
}
