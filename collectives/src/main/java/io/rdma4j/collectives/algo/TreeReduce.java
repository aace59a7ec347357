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
    private final TreeLinks links = new TreeLinks();
    private Reducer red;
    private int finishN;
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
        links.select(r, c.root, n, c.count * c.elemBytes() <= smallBytes);
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
        stage = staging.data((long) (links.nKids + 1) * window * chunkBytes);
        if (rreq.length < window * links.kids.length) {
            rreq = new long[window * links.kids.length];
            sreq = new long[window];
        }
        nextRecv = done = sendDone = 0;
    }

    private long slot(int child, int j) {
        return ((long) child * window + j % window) * chunkBytes;
    }

    @Override
    public void start() {
        beginHandshake(g, staging, links.peers, links.peerCount);
    }

    @Override
    public boolean step() {
        int before = handshakePending();
        boolean ready = handshakeReceived();
        handshakeSent();
        boolean p = before != handshakePending();
        while (sendDone < done && links.parent >= 0 && Ops.done(g, links.parent, sreq[sendDone % window])) {
            sendDone++;
            p = true;
        }
        while (links.nKids > 0 && nextRecv < m && nextRecv - done < window) {
            int j = nextRecv;
            long n = Partition.length(count, m, j) * es;
            for (int i = 0; i < links.nKids; i++) {
                rreq[(j % window) * links.kids.length + i] = n == 0 ? Ops.NONE : Ops.recv(g, links.kids[i], stage, slot(i, j), n, tag);
            }
            nextRecv++;
            p = true;
        }
        while (ready && done < m && (links.nKids == 0 || done < nextRecv) && (links.parent < 0 || done - sendDone < window)) {
            int j = done;
            int b = (j % window) * links.kids.length;
            boolean all = true;
            for (int i = 0; i < links.nKids; i++) {
                if (rreq[b + i] != Ops.NONE) {
                    if (Ops.done(g, links.kids[i], rreq[b + i])) {
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
            if (links.parent < 0) {
                out = rbuf;
                outOff = rBase + Partition.start(count, m, j) * es;
            } else if (links.nKids > 0) {
                out = stage;
                outOff = slot(links.nKids, j);
            }
            if (links.nKids > 0 && n > 0) {
                red.reduceInto(out.segment(), outOff, sbuf.segment(), inOff, stage.segment(), slot(0, j), n);
                for (int i = 1; i < links.nKids; i++) {
                    red.reduce(out.segment(), outOff, stage.segment(), slot(i, j), n);
                }
            }
            if (links.parent >= 0) {
                sreq[j % window] = n == 0 ? Ops.NONE : Ops.send(g, links.parent, out, outOff, n * es, tag);
            } else if (finishN > 0 && n > 0) {
                red.finish(out.segment(), outOff, n, finishN);
            }
            done++;
            p = true;
        }
        if (links.parent < 0) {
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
        if (done < m && links.nKids > 0) {
            return g.worldRank(links.kids[0]);
        }
        return links.parent >= 0 ? g.worldRank(links.parent) : -1;
    }
}
