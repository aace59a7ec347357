package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.core.Ops;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Partition;
import io.rdma4j.collectives.reduce.Reducer;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.Transport;

/**
 * One channel of a ring: the engine behind ring allreduce, reduce-scatter and allgather.
 *
 * <p>The channel's elements are cut into n shards and every shard into m chunks. Chunks travel
 * chunk-major, like NCCL's ring: chunk j goes through all reduce-scatter steps (receive the
 * left neighbour's partial sum of shard {@code r-s-2} into a staging slot, reduce it with this
 * rank's own contribution, forward the result) and then all allgather steps (receive a final
 * shard straight into the output buffer and forward it from there), before the next chunk's
 * steps are issued; up to {@code window} receives are posted ahead and up to {@code window}
 * sends are in flight, so the transfer of chunk k+1 overlaps the reduction of chunk k. Every
 * unit u has one receive R_u from the left and one send S_u to the right, issued in u order,
 * so a single tag per channel suffices (messages of one tag are ordered).
 *
 * <p>Buffer rules that make zero-copy safe: S_u reads the output of R_{u-1} (or the input for
 * the first step); an allgather receive into a region that an earlier send reads is posted only
 * after that send completed; a reduce-scatter intermediate staged for forwarding is overwritten
 * only after its send completed.
 */
final class RingPipeline {

    /**
     * Layout and phases. Vector layout: the channel's range is one vector cut into n balanced
     * shards, at the same offsets in send and receive buffers. Block layout: reduce-scatter's
     * send buffer (block k at k*block) or allgather's receive buffer.
     */
    enum Mode {
        ALL_REDUCE(true, true, true),
        REDUCE_SCATTER(false, true, false),
        ALL_GATHER(false, false, true),
        /** Vector layout, reduce-scatter steps only: shard r ends fully reduced in the receive buffer. */
        VECTOR_REDUCE_SCATTER(true, true, false),
        /** Vector layout, allgather steps only: shard r is read from the send buffer. */
        VECTOR_ALL_GATHER(true, false, true);

        final boolean vector;
        final boolean rs;
        final boolean ag;

        Mode(boolean vector, boolean rs, boolean ag) {
            this.vector = vector;
            this.rs = rs;
            this.ag = ag;
        }
    }

    // configuration of the current call
    private Group g;
    private int n;
    private int r;
    private int left;
    private int right;
    private int tag;
    private Mode mode;
    private Reducer red;
    private int finishN;
    private int es;
    private RegisteredBuffer sbuf;
    private RegisteredBuffer rbuf;
    private RegisteredBuffer stage;
    private long sBase;
    private long rBase;
    private long stageIn;
    private long stageOut;
    private long lo;
    private long len;
    private long block;
    private int window;
    private long chunkBytes;
    private int m;
    private int rsSteps;
    private int steps;
    private long units;

    // progress
    private long nextRecv;
    private long recvDone;
    private long nextSend;
    private long sendDone;
    private long[] rreq = new long[0];
    private long[] sreq = new long[0];

    /** Staging bytes one channel needs. */
    static long stagingBytes(Mode mode, int window, long chunkBytes) {
        return (!mode.rs ? 0 : mode.vector ? 1 : 2) * window * chunkBytes;
    }

    /**
     * @param lo, len   the channel's element range: of the whole vector (allreduce), or within
     *                  each rank's block (reduce-scatter: send block k at k*block; allgather:
     *                  receive block k at k*block)
     * @param finishN   contributors for {@link Reducer#finish} on fully reduced chunks, 0 for none
     */
    void configure(Group g, int lane, Mode mode, Reducer red, int finishN, int elemBytes,
                   RegisteredBuffer sbuf, long sBase, RegisteredBuffer rbuf, long rBase,
                   long lo, long len, long block,
                   RegisteredBuffer stage, long stageOffset, int window, long chunkBytes) {
        this.g = g;
        this.n = g.size();
        this.r = g.rank();
        this.left = (r - 1 + n) % n;
        this.right = (r + 1) % n;
        this.tag = g.tag(lane);
        this.mode = mode;
        this.red = red;
        this.finishN = finishN;
        this.es = elemBytes;
        this.sbuf = sbuf;
        this.sBase = sBase;
        this.rbuf = rbuf;
        this.rBase = rBase;
        this.lo = lo;
        this.len = len;
        this.block = block;
        this.stage = stage;
        this.stageIn = stageOffset;
        this.stageOut = stageOffset + (long) window * chunkBytes;
        this.window = window;
        this.chunkBytes = chunkBytes;
        long chunkElems = Math.max(1, chunkBytes / elemBytes);
        long maxShard = mode.vector ? Partition.ceilDiv(len, n) : len;
        this.m = (int) Partition.ceilDiv(maxShard, chunkElems);
        this.rsSteps = mode.rs ? n - 1 : 0;
        this.steps = rsSteps + (mode.ag ? n - 1 : 0);
        this.units = (long) m * steps;
        if (rreq.length < window) {
            rreq = new long[window];
            sreq = new long[window];
        }
        nextRecv = recvDone = nextSend = sendDone = 0;
    }

    // ---- geometry ----------------------------------------------------------------------------

    private int mod(int x) {
        return ((x % n) + n) % n;
    }

    private long shardLen(int k) {
        return mode.vector ? Partition.length(len, n, k) : len;
    }

    private long sendElem(int k) {
        if (mode.vector) {
            return lo + Partition.start(len, n, k);
        }
        return mode.rs ? k * block + lo : lo;
    }

    private long recvElem(int k) {
        if (mode.vector) {
            return lo + Partition.start(len, n, k);
        }
        return mode.rs ? lo : k * block + lo;
    }

    private int chunk(long u) {
        return (int) (u / steps);
    }

    private int stepOf(long u) {
        return (int) (u % steps);
    }

    /** Shard received by unit u. */
    private int recvShard(long u) {
        int q = stepOf(u);
        return q < rsSteps ? mod(r - q - 2) : mod(r - (q - rsSteps) - 1);
    }

    /** Shard sent by unit u. */
    private int sendShard(long u) {
        int q = stepOf(u);
        return q < rsSteps ? mod(r - q - 1) : mod(r - (q - rsSteps));
    }

    private long chunkStart(int k, int j) {
        return Partition.start(shardLen(k), m, j);
    }

    private long chunkLen(int k, int j) {
        return Partition.length(shardLen(k), m, j);
    }

    private boolean isRs(long u) {
        return stepOf(u) < rsSteps;
    }

    private boolean lastRs(long u) {
        return stepOf(u) == rsSteps - 1;
    }

    /** Where unit u's result lives: buffer 0 = recv buffer, 1 = staging out slot; returns byte offset. */
    private boolean outInStage(long u) {
        return isRs(u) && !mode.vector && !lastRs(u);
    }

    private long outOffset(long u, int k, int j) {
        if (outInStage(u)) {
            return stageOut + (u % window) * chunkBytes;
        }
        return rBase + (recvElem(k) + chunkStart(k, j)) * es;
    }

    // ---- progress ----------------------------------------------------------------------------

    boolean isDone() {
        return recvDone == units && sendDone == units;
    }

    /** World rank this channel waits on. */
    int waitingFor() {
        return recvDone < units ? g.worldRank(left) : g.worldRank(right);
    }

    /** Posts receives; sends only when {@code mayWrite}. */
    boolean step(boolean mayWrite) {
        boolean progressed = false;
        // reap completed sends in order
        while (sendDone < nextSend) {
            long id = sreq[(int) (sendDone % window)];
            if (id != Ops.NONE && Ops.test(g, right, id) == Transport.PENDING) {
                break;
            }
            sendDone++;
            progressed = true;
        }
        // post receives ahead
        while (nextRecv < units && nextRecv - recvDone < window) {
            long u = nextRecv;
            if (mode.rs && !isRs(u) && sendDone <= u - rsSteps) {
                break; // the send that reads this region has not completed yet
            }
            int k = recvShard(u);
            int j = chunk(u);
            long clen = chunkLen(k, j);
            long id = Ops.NONE;
            if (clen > 0) {
                if (isRs(u)) {
                    id = Ops.recv(g, left, stage, stageIn + (u % window) * chunkBytes, clen * es, tag);
                } else {
                    id = Ops.recv(g, left, rbuf, rBase + (recvElem(k) + chunkStart(k, j)) * es,
                            clen * es, tag);
                }
            }
            rreq[(int) (u % window)] = id;
            nextRecv++;
            progressed = true;
        }
        // complete receives in order
        while (recvDone < nextRecv) {
            long u = recvDone;
            int slot = (int) (u % window);
            long id = rreq[slot];
            if (id != Ops.NONE && Ops.test(g, left, id) == Transport.PENDING) {
                break;
            }
            rreq[slot] = Ops.NONE;
            if (isRs(u)) {
                if (outInStage(u) && sendDone <= u + 1 - window) {
                    break; // its output slot is still being sent
                }
                int k = recvShard(u);
                int j = chunk(u);
                long clen = chunkLen(k, j);
                if (clen > 0) {
                    long out = outOffset(u, k, j);
                    RegisteredBuffer dst = outInStage(u) ? stage : rbuf;
                    red.reduceInto(dst.segment(), out, sbuf.segment(), sBase + (sendElem(k) + chunkStart(k, j)) * es,
                            stage.segment(), stageIn + (u % window) * chunkBytes, clen);
                    if (lastRs(u) && finishN > 0) {
                        red.finish(dst.segment(), out, clen, finishN);
                    }
                }
            }
            recvDone++;
            progressed = true;
        }
        // issue sends whose source is ready
        while (mayWrite && nextSend < units && nextSend - sendDone < window
                && (stepOf(nextSend) == 0 || nextSend - 1 < recvDone)) {
            long u = nextSend;
            int k = sendShard(u);
            int j = chunk(u);
            long clen = chunkLen(k, j);
            long id = Ops.NONE;
            if (clen > 0) {
                RegisteredBuffer src;
                long off;
                if (stepOf(u) == 0) {
                    src = sbuf;
                    off = sBase + (sendElem(k) + chunkStart(k, j)) * es;
                } else {
                    long prev = u - 1;
                    src = outInStage(prev) ? stage : rbuf;
                    off = isRs(prev) ? outOffset(prev, k, j) : rBase + (recvElem(k) + chunkStart(k, j)) * es;
                }
                id = Ops.send(g, right, src, off, clen * es, tag);
            }
            sreq[(int) (u % window)] = id;
            nextSend++;
            progressed = true;
        }
        return progressed;
    }
}
