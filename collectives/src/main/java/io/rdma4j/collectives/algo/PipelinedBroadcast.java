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
    private final TreeLinks links = new TreeLinks();
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
        links.select(r, c.root, n, c.count * c.elemBytes() <= smallBytes);
        buf = c.recv;
        base = c.recvOff;
        count = c.count;
        es = c.elemBytes();
        window = o.window();
        m = (int) Partition.ceilDiv(count, Math.max(1, o.chunkBytes() / es));
        tag = g.tag(Group.LANE_DATA);
        if (rreq.length < window || sreq.length < window * links.kids.length) {
            rreq = new long[window];
            sreq = new long[window * links.kids.length];
        }
        nextRecv = recvDone = sent = sendDone = 0;
        if (links.parent < 0) {
            nextRecv = recvDone = m; // the root has every chunk
        }
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
        while (sendDone < sent) {
            int b = (sendDone % window) * links.kids.length;
            boolean all = true;
            for (int i = 0; i < links.nKids; i++) {
                if (sreq[b + i] != Ops.NONE) {
                    if (Ops.done(g, links.kids[i], sreq[b + i])) {
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
                    : Ops.recv(g, links.parent, buf, base + Partition.start(count, m, j) * es, n * es, tag);
            nextRecv++;
            p = true;
        }
        while (recvDone < nextRecv) {
            long id = rreq[recvDone % window];
            if (id != Ops.NONE && !Ops.done(g, links.parent, id)) {
                break;
            }
            rreq[recvDone % window] = Ops.NONE;
            recvDone++;
            p = true;
        }
        while (ready && links.nKids > 0 && sent < recvDone && sent - sendDone < window) {
            int j = sent;
            long n = Partition.length(count, m, j);
            long off = base + Partition.start(count, m, j) * es;
            int b = (j % window) * links.kids.length;
            for (int i = 0; i < links.nKids; i++) {
                sreq[b + i] = n == 0 ? Ops.NONE : Ops.send(g, links.kids[i], buf, off, n * es, tag);
            }
            sent++;
            p = true;
        }
        return p;
    }

    @Override
    public boolean isDone() {
        return handshakePending() == 0 && recvDone == m && (links.nKids == 0 || (sent == m && sendDone == m));
    }

    @Override
    public int waitingFor() {
        int w = handshakeWaitingFor();
        if (w >= 0) {
            return w;
        }
        if (recvDone < m) {
            return g.worldRank(links.parent);
        }
        return links.nKids > 0 ? g.worldRank(links.kids[0]) : -1;
    }
}
