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

import java.lang.foreign.MemorySegment;

/**
 * Allreduce for power-of-two groups by recursive exchanges with partner {@code rank ^ d}.
 *
 * <ul>
 *   <li>Vectors of at most {@code doublingBytes} (the policy's {@code doublingBytes}: its small
 *       vectors, and two ranks' mid-size ones over TCP): recursive doubling, log2 n steps that each
 *       exchange and reduce the whole vector (fewest hops; every rank computes the same sums
 *       since {@code a OP b == b OP a}).</li>
 *   <li>Otherwise Rabenseifner: reduce-scatter by recursive halving (step k exchanges half of
 *       the range held so far and reduces the kept half), then allgather by recursive doubling
 *       in the reverse order, received straight into the receive buffer. Moves the same bytes
 *       as the ring in 2 log2 n steps.</li>
 * </ul>
 * Every step is cut into chunks received into {@code window} staging slots (the first step of
 * an out-of-place call: into the receive buffer), reduced as they arrive; steps run one after the
 * other because each step sends what the previous produced.
 */
public final class RecursiveHalvingDoublingAllReduce extends CollectiveOp {
    private static final int MAX_STEPS = 64;

    private Group g;
    private Staging staging;
    private Descriptor identity;
    private Reducer red;
    private int finishN;
    private int es;
    private RegisteredBuffer sbuf;
    private RegisteredBuffer rbuf;
    private RegisteredBuffer stage;
    private long sBase;
    private long rBase;
    private int window;
    private long chunkBytes;
    private int tag;

    // step table
    private int steps;
    private final int[] partner = new int[MAX_STEPS];
    private final long[] sendLo = new long[MAX_STEPS];
    private final long[] sendLen = new long[MAX_STEPS];
    private final long[] recvLo = new long[MAX_STEPS];
    private final long[] recvLen = new long[MAX_STEPS];
    private final boolean[] reduce = new boolean[MAX_STEPS];
    private final boolean[] fromSendBuf = new boolean[MAX_STEPS];
    private final boolean[] finishAfter = new boolean[MAX_STEPS];
    private boolean doubling;
    private boolean inPlace;
    private final int[] peers = new int[32];
    /** The range each halving step keeps, for the doubling steps that send it back (one per level). */
    private final long[] keepLo = new long[MAX_STEPS / 2];
    private final long[] keepHi = new long[MAX_STEPS / 2];
    private int peerCount;

    // progress within the current step
    private int cur;
    private int mSend;
    private int mRecv;
    private int nextRecv;
    private int recvDone;
    private int nextSend;
    private int sendDone;
    private long[] rreq = new long[0];
    private long[] sreq = new long[0];

    @Override
    public Descriptor identity() {
        return identity;
    }

    public void prepare(Group g, Staging staging, CollectiveOptions o, Call c, long doublingBytes) {
        prepare(g, staging, o, c, c.identity, doublingBytes);
    }

    public void prepare(Group g, Staging staging, CollectiveOptions o, Call c, Descriptor handshake, long doublingBytes) {
        int n = g.size();
        if (Integer.bitCount(n) != 1) {
            throw new IllegalArgumentException("recursive halving/doubling needs a power-of-two group, not " + n);
        }
        this.g = g;
        this.staging = staging;
        this.identity = c.identity;
        hs.copyFrom(handshake);
        this.red = c.reducer;
        this.finishN = red.needsFinish() ? c.contributors : 0;
        this.es = c.elemBytes();
        this.sbuf = c.send;
        this.sBase = c.sendOff;
        this.rbuf = c.recv;
        this.rBase = c.recvOff;
        this.inPlace = c.inPlace();
        this.window = o.window();
        this.chunkBytes = o.chunkBytes();
        this.tag = g.tag(Group.LANE_DATA);
        this.stage = staging.data((long) window * chunkBytes);
        if (rreq.length < window) {
            rreq = new long[window];
            sreq = new long[window];
        }
        int levels = Integer.numberOfTrailingZeros(n);
        int r = g.rank();
        long count = c.count;
        doubling = count * es <= doublingBytes;
        steps = 0;
        peerCount = 0;
        if (doubling) {
            for (int k = 0; k < levels; k++) {
                add(r ^ (1 << k), 0, count, 0, count, true, k == 0, k == levels - 1);
            }
        } else {
            long lo = 0;
            long hi = count;
            for (int k = 0; k < levels; k++) {
                int d = n >> (k + 1);
                long mid = lo + (hi - lo) / 2;
                boolean lower = (r & d) == 0;
                long kl = lower ? lo : mid;
                long kh = lower ? mid : hi;
                long sl = lower ? mid : lo;
                long sh = lower ? hi : mid;
                add(r ^ d, sl, sh - sl, kl, kh - kl, true, k == 0, k == levels - 1);
                keepLo[k] = kl;
                keepHi[k] = kh;
                lo = kl;
                hi = kh;
            }
            for (int k = levels - 1; k >= 0; k--) {
                int d = n >> (k + 1);
                // send what this rank holds (kept range of step k), receive the partner's half
                long pl = k == 0 ? 0 : keepLo[k - 1];
                long ph = k == 0 ? count : keepHi[k - 1];
                long kl = keepLo[k];
                long kh = keepHi[k];
                long ol = kl == pl ? kh : pl;
                long oh = kl == pl ? ph : kl;
                add(r ^ d, kl, kh - kl, ol, oh - ol, false, false, false);
            }
        }
        beginStep(0);
    }

    private void add(int p, long sl, long sn, long rl, long rn, boolean red, boolean fromSend, boolean finish) {
        partner[steps] = p;
        sendLo[steps] = sl;
        sendLen[steps] = sn;
        recvLo[steps] = rl;
        recvLen[steps] = rn;
        reduce[steps] = red;
        fromSendBuf[steps] = fromSend;
        finishAfter[steps] = finish;
        steps++;
        for (int i = 0; i < peerCount; i++) {
            if (peers[i] == p) {
                return;
            }
        }
        peers[peerCount++] = p;
    }

    private void beginStep(int k) {
        cur = k;
        if (k >= steps) {
            return;
        }
        long ce = Math.max(1, chunkBytes / es);
        mSend = (int) Partition.ceilDiv(sendLen[k], ce);
        mRecv = (int) Partition.ceilDiv(recvLen[k], ce);
        nextRecv = recvDone = nextSend = sendDone = 0;
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
        while (cur < steps) {
            boolean moved = advance(ready);
            p |= moved;
            if (recvDone == mRecv && sendDone == mSend) {
                if (finishAfter[cur] && finishN > 0 && recvLen[cur] > 0) {
                    red.finish(rbuf.segment(), rBase + recvLo[cur] * es, recvLen[cur], finishN);
                }
                beginStep(cur + 1);
                p = true;
                continue;
            }
            if (!moved) {
                break;
            }
        }
        return p;
    }

    private boolean advance(boolean ready) {
        boolean p = false;
        int k = cur;
        int peer = partner[k];
        while (sendDone < nextSend && Ops.done(g, peer, sreq[sendDone % window])) {
            sendDone++;
            p = true;
        }
        while (nextRecv < mRecv && nextRecv - recvDone < window) {
            int j = nextRecv;
            long n = Partition.length(recvLen[k], mRecv, j);
            long id = Ops.NONE;
            if (n > 0) {
                id = reduce[k] && !intoRecvBuf(k)
                        ? Ops.recv(g, peer, stage, (long) (j % window) * chunkBytes, n * es, tag)
                        : Ops.recv(g, peer, rbuf, rBase + (recvLo[k] + Partition.start(recvLen[k], mRecv, j)) * es,
                        n * es, tag);
            }
            rreq[j % window] = id;
            nextRecv++;
            p = true;
        }
        while (ready && nextSend < mSend && nextSend - sendDone < window) {
            int j = nextSend;
            long n = Partition.length(sendLen[k], mSend, j);
            long off = (sendLo[k] + Partition.start(sendLen[k], mSend, j)) * es;
            sreq[j % window] = n == 0 ? Ops.NONE
                    : fromSendBuf[k] ? Ops.send(g, peer, sbuf, sBase + off, n * es, tag)
                    : Ops.send(g, peer, rbuf, rBase + off, n * es, tag);
            nextSend++;
            p = true;
        }
        while (recvDone < nextRecv) {
            int j = recvDone;
            long id = rreq[j % window];
            if (id != Ops.NONE && !Ops.done(g, peer, id)) {
                break;
            }
            rreq[j % window] = Ops.NONE;
            if (reduce[k]) {
                // recursive doubling reduces the region it also sends: wait for that chunk's send
                if (doubling && (!fromSendBuf[k] || inPlace) && sendDone <= j) {
                    break;
                }
                long n = Partition.length(recvLen[k], mRecv, j);
                if (n > 0) {
                    long off = (recvLo[k] + Partition.start(recvLen[k], mRecv, j)) * es;
                    MemorySegment own = fromSendBuf[k] ? sbuf.segment() : rbuf.segment();
                    long ownOff = (fromSendBuf[k] ? sBase : rBase) + off;
                    boolean direct = intoRecvBuf(k);
                    MemorySegment theirs = direct ? rbuf.segment() : stage.segment();
                    long theirOff = direct ? rBase + off : (long) (j % window) * chunkBytes;
                    if (doubling && (g.rank() & (1 << k)) != 0) {
                        // both partners fold (lower rank's) OP (higher rank's): the same bits on both
                        red.reduceInto(rbuf.segment(), rBase + off, theirs, theirOff, own, ownOff, n);
                    } else {
                        red.reduceInto(rbuf.segment(), rBase + off, own, ownOff, theirs, theirOff, n);
                    }
                }
            }
            recvDone++;
            p = true;
        }
        return p;
    }

    /**
     * Whether step k receives the partner's chunks straight into the receive buffer, where their
     * sums go, instead of into staging slots: a step that reduces the send buffer's data into a
     * receive buffer of its own (the first, out of place). The reduction then reads two buffers
     * the call touches anyway, and the staging slots stay out of the cache.
     */
    private boolean intoRecvBuf(int k) {
        return fromSendBuf[k] && !inPlace;
    }

    @Override
    public boolean isDone() {
        return cur >= steps && handshakePending() == 0;
    }

    @Override
    public int waitingFor() {
        int w = handshakeWaitingFor();
        if (w >= 0) {
            return w;
        }
        return cur < steps ? g.worldRank(partner[cur]) : -1;
    }
}
