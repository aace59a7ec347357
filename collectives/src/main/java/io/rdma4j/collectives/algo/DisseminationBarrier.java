package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.Descriptor;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Ops;
import io.rdma4j.collectives.core.Staging;
import io.rdma4j.transport.RegisteredBuffer;

/**
 * Dissemination barrier: in round k rank r notifies {@code r + 2^k} and waits for
 * {@code r - 2^k}; after ceil(log2 n) rounds every rank has transitively heard from every other.
 * The notifications are the collective descriptors themselves, so the barrier checks the call
 * like every other collective at no extra cost.
 */
public final class DisseminationBarrier extends CollectiveOp {
    private Group g;
    private Descriptor identity;
    private RegisteredBuffer control;
    private int rounds;
    private int round;
    private boolean sentThisRound;
    private int tag;
    private final long[] rreq = new long[32];
    private final long[] sreq = new long[32];
    private int sendsIssued;
    private int sendsDone;

    @Override
    public Descriptor identity() {
        return identity;
    }

    public void prepare(Group g, Staging staging, CollectiveOptions o, Call c) {
        this.g = g;
        this.identity = c.identity;
        hs.copyFrom(c.identity);
        int n = g.size();
        rounds = 32 - Integer.numberOfLeadingZeros(n - 1);
        control = staging.control(rounds + 1);
        tag = g.tag(Group.LANE_CONTROL);
        round = 0;
        sentThisRound = false;
        sendsIssued = sendsDone = 0;
    }

    private int to(int k) {
        return (g.rank() + (1 << k)) % g.size();
    }

    private int from(int k) {
        int n = g.size();
        return ((g.rank() - (1 << k)) % n + n) % n;
    }

    @Override
    public void start() {
        hs.write(control.segment(), 0);
        for (int k = 0; k < rounds; k++) {
            rreq[k] = Ops.recv(g, from(k), control, (long) (k + 1) * Descriptor.CONTROL_SLOT, Descriptor.CONTROL_SLOT, tag);
        }
    }

    @Override
    public boolean step() {
        boolean p = false;
        while (sendsDone < sendsIssued && Ops.done(g, to(sendsDone), sreq[sendsDone])) {
            sendsDone++;
            p = true;
        }
        while (round < rounds) {
            if (!sentThisRound) {
                sreq[round] = Ops.send(g, to(round), control, 0, Descriptor.BYTES, tag);
                sendsIssued++;
                sentThisRound = true;
                p = true;
            }
            long got = Ops.test(g, from(round), rreq[round]);
            if (got == io.rdma4j.transport.Transport.PENDING) {
                break;
            }
            validate(g, from(round), control.segment(), (long) (round + 1) * Descriptor.CONTROL_SLOT, got);
            round++;
            sentThisRound = false;
            p = true;
        }
        return p;
    }

    @Override
    public boolean isDone() {
        return round == rounds && sendsDone == sendsIssued;
    }

    @Override
    public int waitingFor() {
        return round < rounds ? g.worldRank(from(round)) : sendsDone < sendsIssued ? g.worldRank(to(sendsDone)) : -1;
    }
}
