package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.Descriptor;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Ops;
import io.rdma4j.collectives.core.Staging;
import io.rdma4j.collectives.reduce.Reducer;
import io.rdma4j.nativesupport.internal.BulkCopy;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.Transport;

import java.lang.foreign.MemorySegment;

/**
 * Latency path of {@link io.rdma4j.collectives.Algorithm#RHD} for vectors of at most
 * {@link Descriptor#EAGER_BYTES}: log2 n steps, in step k exchange the whole current vector with
 * {@code rank ^ 2^k} and reduce. Each message carries the collective descriptor in front of the
 * payload, so the mismatch check costs no separate handshake: every receive of every step is
 * posted at the start (their clear-to-sends travel while the first step runs), and step k's
 * message is one hop. Every rank ends with identical bits ({@code a OP b == b OP a}).
 *
 * <p>Control slots: L receive slots, then two send slots used alternately; the vector being
 * built lives in the payload of the send slot of the next step, which is written only after
 * that slot's previous send completed.
 */
public final class RecursiveDoublingAllReduce extends CollectiveOp {
    private static final int HDR = Descriptor.BYTES;
    private static final int SLOT = Descriptor.CONTROL_SLOT;

    private Group g;
    private Descriptor identity;
    private Call c;
    private Reducer red;
    private RegisteredBuffer control;
    private int levels;
    private int step;
    private long bytes;
    private int tag;
    private int sendsIssued;
    private int sendsDone;
    private final long[] rreq = new long[32];
    private final long[] sreq = new long[32];

    @Override
    public Descriptor identity() {
        return identity;
    }

    /** Whether a call of {@code bytes} on {@code n} ranks can take this path. */
    public static boolean fits(long bytes, int n) {
        return bytes <= Descriptor.EAGER_BYTES && Integer.bitCount(n) == 1;
    }

    public void prepare(Group g, Staging staging, Call c) {
        this.g = g;
        this.c = c;
        this.identity = c.identity;
        hs.copyFrom(c.identity);
        hs.sender = g.worldRank(g.rank());
        this.red = c.reducer;
        this.levels = Integer.numberOfTrailingZeros(g.size());
        this.bytes = c.count * c.elemBytes();
        this.control = staging.control(levels + 2);
        this.tag = g.tag(Group.LANE_CONTROL);
        step = 0;
        sendsIssued = sendsDone = 0;
    }

    private long recvSlot(int k) {
        return (long) k * SLOT;
    }

    private long sendSlot(int k) {
        return (long) (levels + (k & 1)) * SLOT;
    }

    private int partner(int k) {
        return g.rank() ^ (1 << k);
    }

    @Override
    public void start() {
        MemorySegment s = control.segment();
        hs.write(s, sendSlot(0));
        hs.write(s, sendSlot(1));
        if (bytes > 0) {
            BulkCopy.copy(c.send.segment(), c.sendOff, s, sendSlot(0) + HDR, bytes);
        }
        for (int k = 0; k < levels; k++) {
            rreq[k] = Ops.recv(g, partner(k), control, recvSlot(k), SLOT, tag);
        }
        sreq[0] = Ops.send(g, partner(0), control, sendSlot(0), HDR + bytes, tag);
        sendsIssued = 1;
    }

    @Override
    public boolean step() {
        boolean p = false;
        while (sendsDone < sendsIssued && Ops.done(g, partner(sendsDone), sreq[sendsDone])) {
            sendsDone++;
            p = true;
        }
        while (step < levels) {
            int k = step;
            if (rreq[k] != Ops.NONE) {
                long got = Ops.test(g, partner(k), rreq[k]);
                if (got == Transport.PENDING) {
                    break;
                }
                rreq[k] = Ops.NONE;
                if (got != HDR + bytes || !hs.matchesHeader(control.segment(), recvSlot(k))) {
                    throw mismatch(g, partner(k), control.segment(), recvSlot(k), got);
                }
                p = true;
            }
            if (sendsDone < k) {
                break; // the slot the result goes into is still being sent (step k-1)
            }
            MemorySegment s = control.segment();
            if (bytes > 0) {
                red.reduceInto(s, sendSlot(k + 1) + HDR, s, sendSlot(k) + HDR, s, recvSlot(k) + HDR, c.count);
            }
            step++;
            p = true;
            if (step < levels) {
                sreq[step] = Ops.send(g, partner(step), control, sendSlot(step), HDR + bytes, tag);
                sendsIssued++;
            } else if (bytes > 0) {
                if (red.needsFinish()) {
                    red.finish(s, sendSlot(step) + HDR, c.count, c.contributors);
                }
                BulkCopy.copy(s, sendSlot(step) + HDR, c.recv.segment(), c.recvOff, bytes);
            }
        }
        return p;
    }

    @Override
    public boolean isDone() {
        return step == levels && sendsDone == sendsIssued;
    }

    @Override
    public int waitingFor() {
        return step < levels ? g.worldRank(partner(step)) : sendsDone < sendsIssued ? g.worldRank(partner(sendsDone)) : -1;
    }
}
