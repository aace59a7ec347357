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
 * payload, so the mismatch check costs no separate handshake, and step k's message is one hop.
 * Step k's receive is posted together with step k's send (after it, but for step 0's), so that
 * its clear-to-send, which completes the partner's send, leaves with this side's message: one
 * write or one packet per step and partner. Posted at the start instead, the later steps'
 * clear-to-sends go out alone, a system call and a wake-up of the partner more per step over TCP
 * (4 ranks on 2 cores, 8 B-2 KiB, three passes taking turns: 19-32 us per call against 25-41;
 * re-measure with {@code allreduce-perf --ranks 4 -t tcp -b 8 -e 8K -f 4}). An eager message that
 * arrives before its receive is kept by the transport until the receive is posted. Every rank
 * ends with identical bits ({@code a OP b == b OP a}).
 *
 * <p>Control slots: L receive slots, then two send slots used alternately; the vector being
 * built lives in the payload of the send slot of the next step, which is written only after
 * that slot's previous send completed. The last step reduces into the caller's receive buffer
 * (the input was copied into a send slot at the start, so this holds in place too).
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
        rreq[0] = Ops.recv(g, partner(0), control, recvSlot(0), SLOT, tag);
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
            boolean last = k == levels - 1;
            if (!last && sendsDone < k) {
                break; // the slot the result goes into is still being sent (step k-1)
            }
            MemorySegment s = control.segment();
            // both partners fold (the lower rank's vector) OP (the higher rank's): the same bits on
            // both, NaN payloads and signs included
            boolean low = (g.rank() & (1 << k)) == 0;
            long first = (low ? sendSlot(k) : recvSlot(k)) + HDR;
            long second = (low ? recvSlot(k) : sendSlot(k)) + HDR;
            if (last && bytes > 0) {
                // the last step reduces straight into the receive buffer: no copy out of a slot
                MemorySegment out = c.recv.segment();
                red.reduceInto(out, c.recvOff, s, first, s, second, c.count);
                if (red.needsFinish()) {
                    red.finish(out, c.recvOff, c.count, c.contributors);
                }
            } else if (bytes > 0) {
                red.reduceInto(s, sendSlot(k + 1) + HDR, s, first, s, second, c.count);
            }
            step++;
            p = true;
            if (step < levels) {
                sreq[step] = Ops.send(g, partner(step), control, sendSlot(step), HDR + bytes, tag);
                sendsIssued++;
                rreq[step] = Ops.recv(g, partner(step), control, recvSlot(step), SLOT, tag);
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
