package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.Descriptor;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Ops;
import io.rdma4j.collectives.core.Partition;
import io.rdma4j.collectives.core.Staging;
import io.rdma4j.collectives.reduce.Reducer;
import io.rdma4j.transport.RegisteredBuffer;

/**
 * Reduce to a root up a tree (binomial for small messages, chain for large), chunked and
 * pipelined: children's partial results arrive in staging slots, are reduced with this rank's
 * input into an outgoing staging slot (into the receive buffer at the root) and sent on. Leaves
 * send their input directly. Only the root's receive buffer is written.
 */
public final class TreeReduce extends CollectiveOp {
    private Group g;
    private Staging staging;
    private Descriptor identity;
    private Reducer red;
    private int finishN;
    private int parent;
    private int[] kids = new int[8];
    private int nKids;
    private int[] peers = new int[9];
    private int peerCount;
    private RegisteredBuffer sbuf;
    private RegisteredBuffer rbuf;
    private RegisteredBuffer stage;
    private long sBase;
    private long rBase;
    private long count;
    private int es;
    private int window;
    private long chunkBytes;
    private int m;
    private int tag;
    private int nextRecv;
    private int done;
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
        // the broadcast trees, traversed leaves to root
        parent = small ? Trees.binomialParent(r, c.root, n) : Trees.chainParent(r, c.root, n);
        nKids = small ? Trees.binomialChildren(r, c.root, n, kids) : Trees.chainChildren(r, c.root, n, kids);
        peerCount = 0;
        if (parent >= 0) {
            peers[peerCount++] = parent;
        }
        for (int i = 0; i < nKids; i++) {
            peers[peerCount++] = kids[i];
        }
        red = c.reducer;
        finishN = red.needsFinish() ? c.contributors : 0;
        sbuf = c.send;
        sBase = c.sendOff;
        rbuf = c.recv;
        rBase = c.recvOff;
        count = c.count;
        es = c.elemBytes();
        window = o.window();
        chunkBytes = o.chunkBytes();
        m = (int) Partition.ceilDiv(count, Math.max(1, chunkBytes / es));
        tag = g.tag(Group.LANE_DATA);
        stage = staging.data((long) (nKids + 1) * window * chunkBytes);
        if (rreq.length < window * kids.length) {
            rreq = new long[window * kids.length];
            sreq = new long[window];
        }
        nextRecv = done = sendDone = 0;
    }

    private long slot(int child, int j) {
        return ((long) child * window + j % window) * chunkBytes;
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
        while (sendDone < done && parent >= 0 && Ops.done(g, parent, sreq[sendDone % window])) {
            sendDone++;
            p = true;
        }
        while (nKids > 0 && nextRecv < m && nextRecv - done < window) {
            int j = nextRecv;
            long n = Partition.length(count, m, j) * es;
            for (int i = 0; i < nKids; i++) {
                rreq[(j % window) * kids.length + i] = n == 0 ? Ops.NONE : Ops.recv(g, kids[i], stage, slot(i, j), n, tag);
            }
            nextRecv++;
            p = true;
        }
        while (ready && done < m && (nKids == 0 || done < nextRecv) && (parent < 0 || done - sendDone < window)) {
            int j = done;
            int b = (j % window) * kids.length;
            boolean all = true;
            for (int i = 0; i < nKids; i++) {
                if (rreq[b + i] != Ops.NONE) {
                    if (Ops.done(g, kids[i], rreq[b + i])) {
                        rreq[b + i] = Ops.NONE;
                    } else {
                        all = false;
                    }
                }
            }
            if (!all) {
                break;
            }
            long n = Partition.length(count, m, j);
            long inOff = sBase + Partition.start(count, m, j) * es;
            RegisteredBuffer out = sbuf;
            long outOff = inOff;
            if (parent < 0) {
                out = rbuf;
                outOff = rBase + Partition.start(count, m, j) * es;
            } else if (nKids > 0) {
                out = stage;
                outOff = slot(nKids, j);
            }
            if (nKids > 0 && n > 0) {
                red.reduceInto(out.segment(), outOff, sbuf.segment(), inOff, stage.segment(), slot(0, j), n);
                for (int i = 1; i < nKids; i++) {
                    red.reduce(out.segment(), outOff, stage.segment(), slot(i, j), n);
                }
            }
            if (parent >= 0) {
                sreq[j % window] = n == 0 ? Ops.NONE : Ops.send(g, parent, out, outOff, n * es, tag);
            } else if (finishN > 0 && n > 0) {
                red.finish(out.segment(), outOff, n, finishN);
            }
            done++;
            p = true;
        }
        if (parent < 0) {
            sendDone = done;
        }
        return p;
    }

    @Override
    public boolean isDone() {
        return handshakePending() == 0 && done == m && sendDone == m;
    }

    @Override
    public int waitingFor() {
        int w = handshakeWaitingFor();
        if (w >= 0) {
            return w;
        }
        if (done < m && nKids > 0) {
            return g.worldRank(kids[0]);
        }
        return parent >= 0 ? g.worldRank(parent) : -1;
    }
}
