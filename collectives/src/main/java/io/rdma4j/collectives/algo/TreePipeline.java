package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Ops;
import io.rdma4j.collectives.core.Partition;
import io.rdma4j.collectives.reduce.Reducer;
import io.rdma4j.transport.RegisteredBuffer;

/**
 * Allreduce of one element range over one binary tree, chunked and pipelined: chunks flow up
 * (children's partial sums are received into staging, reduced with this rank's input into the
 * receive buffer and forwarded to the parent), the root finishes each chunk and sends it down,
 * and every rank receives final chunks from its parent straight into its receive buffer and
 * forwards them to its children. Up and down chunks are in flight at the same time; up to
 * {@code window} chunks are posted ahead in each direction.
 *
 * <p>A final chunk is received into the region that the same chunk's up-send read, so its
 * receive is posted only after that send completed.
 */
final class TreePipeline {
    private Group g;
    private int parent;
    private final int[] children = new int[2];
    private int nChildren;
    private int tag;
    private Reducer red;
    private int finishN;
    private int es;
    private RegisteredBuffer sbuf;
    private RegisteredBuffer rbuf;
    private RegisteredBuffer stage;
    private long sBase;
    private long rBase;
    private long stageOff;
    private long lo;
    private long len;
    private int window;
    private long chunkBytes;
    private int m;

    private int nextUpRecv;
    private int upDone;
    private int upSent;
    private int upSendDone;
    private int nextDownRecv;
    private int downDone;
    private int downSent;
    private int downSendDone;
    private long[] upRecv = new long[0];   // [slot * 2 + child]
    private long[] upSend = new long[0];   // [slot]
    private long[] downRecv = new long[0]; // [slot]
    private long[] downSend = new long[0]; // [slot * 2 + child]

    static long stagingBytes(int window, long chunkBytes) {
        return 2L * window * chunkBytes;
    }

    void configure(Group g, int lane, int parent, int[] kids, int nKids, Reducer red, int finishN, int es,
                   RegisteredBuffer sbuf, long sBase, RegisteredBuffer rbuf, long rBase, long lo, long len,
                   RegisteredBuffer stage, long stageOff, int window, long chunkBytes) {
        this.g = g;
        this.tag = g.tag(lane);
        this.parent = parent;
        this.nChildren = nKids;
        for (int i = 0; i < nKids; i++) {
            children[i] = kids[i];
        }
        this.red = red;
        this.finishN = finishN;
        this.es = es;
        this.sbuf = sbuf;
        this.sBase = sBase;
        this.rbuf = rbuf;
        this.rBase = rBase;
        this.lo = lo;
        this.len = len;
        this.stage = stage;
        this.stageOff = stageOff;
        this.window = window;
        this.chunkBytes = chunkBytes;
        this.m = (int) Partition.ceilDiv(len, Math.max(1, chunkBytes / es));
        if (upSend.length < window) {
            upRecv = new long[2 * window];
            upSend = new long[window];
            downRecv = new long[window];
            downSend = new long[2 * window];
        }
        nextUpRecv = upDone = upSent = upSendDone = 0;
        nextDownRecv = downDone = downSent = downSendDone = 0;
    }

    private long chunkStart(int j) {
        return lo + Partition.start(len, m, j);
    }

    private long chunkLen(int j) {
        return Partition.length(len, m, j);
    }

    private long stageSlot(int child, int j) {
        return stageOff + ((long) child * window + j % window) * chunkBytes;
    }

    boolean isDone() {
        return upDone == m && downDone == m && upSendDone == upSent && downSendDone == downSent;
    }

    int waitingFor() {
        if (upDone < m && nChildren > 0) {
            for (int i = 0; i < nChildren; i++) {
                if (upRecv[(upDone % window) * 2 + i] != Ops.NONE) {
                    return g.worldRank(children[i]);
                }
            }
        }
        if (parent >= 0 && downDone < m) {
            return g.worldRank(parent);
        }
        return nChildren > 0 ? g.worldRank(children[0]) : parent >= 0 ? g.worldRank(parent) : -1;
    }

    boolean step(boolean mayWrite) {
        boolean p = false;
        while (upSendDone < upSent && Ops.done(g, parent, upSend[upSendDone % window])) {
            upSendDone++;
            p = true;
        }
        while (downSendDone < downSent) {
            int base = (downSendDone % window) * 2;
            boolean all = true;
            for (int i = 0; i < nChildren; i++) {
                if (downSend[base + i] != Ops.NONE) {
                    if (Ops.done(g, children[i], downSend[base + i])) {
                        downSend[base + i] = Ops.NONE;
                    } else {
                        all = false;
                    }
                }
            }
            if (!all) {
                break;
            }
            downSendDone++;
            p = true;
        }
        // up: receive children's partial results ahead
        while (nChildren > 0 && nextUpRecv < m && nextUpRecv - upDone < window) {
            int j = nextUpRecv;
            long bytes = chunkLen(j) * es;
            for (int i = 0; i < nChildren; i++) {
                upRecv[(j % window) * 2 + i] = bytes == 0 ? Ops.NONE
                        : Ops.recv(g, children[i], stage, stageSlot(i, j), bytes, tag);
            }
            nextUpRecv++;
            p = true;
        }
        // up: reduce and forward
        while (mayWrite && upDone < m && (parent < 0 || upSent - upSendDone < window)
                && (nChildren == 0 || upDone < nextUpRecv)) {
            int j = upDone;
            boolean all = true;
            for (int i = 0; i < nChildren; i++) {
                int slot = (j % window) * 2 + i;
                if (upRecv[slot] != Ops.NONE) {
                    if (Ops.done(g, children[i], upRecv[slot])) {
                        upRecv[slot] = Ops.NONE;
                    } else {
                        all = false;
                    }
                }
            }
            if (!all) {
                break;
            }
            long n = chunkLen(j);
            long off = chunkStart(j) * es;
            RegisteredBuffer src = sbuf;
            long srcOff = sBase + off;
            if (nChildren > 0 && n > 0) {
                red.reduceInto(rbuf.segment(), rBase + off, sbuf.segment(), sBase + off,
                        stage.segment(), stageSlot(0, j), n);
                if (nChildren > 1) {
                    red.reduce(rbuf.segment(), rBase + off, stage.segment(), stageSlot(1, j), n);
                }
                src = rbuf;
                srcOff = rBase + off;
            }
            if (parent >= 0) {
                upSend[upSent % window] = n == 0 ? Ops.NONE : Ops.send(g, parent, src, srcOff, n * es, tag);
                upSent++;
            } else if (finishN > 0 && n > 0) {
                red.finish(rbuf.segment(), rBase + off, n, finishN);
            }
            upDone++;
            p = true;
        }
        // down: receive final chunks from the parent into the receive buffer
        while (parent >= 0 && nextDownRecv < m && nextDownRecv - downDone < window && nextDownRecv < upSendDone) {
            int j = nextDownRecv;
            long n = chunkLen(j);
            downRecv[j % window] = n == 0 ? Ops.NONE
                    : Ops.recv(g, parent, rbuf, rBase + chunkStart(j) * es, n * es, tag);
            nextDownRecv++;
            p = true;
        }
        // down: forward final chunks to the children
        while (mayWrite && downDone < (parent < 0 ? upDone : nextDownRecv)
                && (nChildren == 0 || downSent - downSendDone < window)) {
            int j = downDone;
            if (parent >= 0) {
                long id = downRecv[j % window];
                if (id != Ops.NONE && !Ops.done(g, parent, id)) {
                    break;
                }
                downRecv[j % window] = Ops.NONE;
            }
            long n = chunkLen(j);
            if (nChildren > 0) {
                int base = (downSent % window) * 2;
                for (int i = 0; i < nChildren; i++) {
                    downSend[base + i] = n == 0 ? Ops.NONE
                            : Ops.send(g, children[i], rbuf, rBase + chunkStart(j) * es, n * es, tag);
                }
                downSent++;
            }
            downDone++;
            p = true;
        }
        return p;
    }
}
