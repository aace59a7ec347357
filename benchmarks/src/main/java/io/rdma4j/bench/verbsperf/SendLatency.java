package io.rdma4j.bench.verbsperf;

import io.rdma4j.verbs.RecvWorkRequests;
import io.rdma4j.verbs.SendFlags;
import io.rdma4j.verbs.SendOpcode;
import io.rdma4j.verbs.SendWorkRequests;
import io.rdma4j.verbs.WorkCompletions;

import java.io.IOException;

/**
 * The ping-pong of ib_send_lat (perftest's run_iter_lat_send): the client sends first, each
 * side answers a received message with its own send, and a receive is re-posted for every one
 * consumed. A sample is the time between two consecutive posts of one side: one round trip.
 */
final class SendLatency implements AutoCloseable {
    private final PerfEndpoint e;
    private final PerfParams p;
    private final OobChannel oob;
    private final SendWorkRequests send = new SendWorkRequests(1, 1);
    private final RecvWorkRequests recv = new RecvWorkRequests(1, 1);
    private final WorkCompletions sendWc = new WorkCompletions(1);
    private final WorkCompletions recvWc = new WorkCompletions(1);
    private final long[] posted;
    private final long[] scratch;
    private final StallGuard guard;
    private int size;
    private int flags;

    SendLatency(PerfEndpoint e, PerfParams p, OobChannel oob) {
        this.e = e;
        this.p = p;
        this.oob = oob;
        this.posted = new long[Math.max(p.iters, p.maxWarmupRound())];
        this.scratch = new long[posted.length];
        this.guard = new StallGuard(p.oobTimeoutSeconds * 1_000_000_000L, oob.peer());
    }

    void prepare(int size) {
        this.size = size;
        flags = size <= e.inlineSize ? SendFlags.INLINE : SendFlags.NONE;
        send.reset();
        send.addSge(send.add(1, SendOpcode.SEND, flags), e.mr, 0, size);
        recv.reset();
        recv.addSge(recv.add(2), e.mr, e.half, size);
    }

    /** One ping-pong of {@code iters} messages each way; returns the report row when {@code measure}. */
    LatencyResult run(int iters, boolean measure) throws IOException {
        int depth = Math.min(p.rxDepth, iters);
        for (int i = 0; i < depth; i++) {
            e.qp.postRecv(recv);
        }
        oob.barrier((measure ? "send_lat " : "send_lat warm-up ") + size);
        boolean client = !p.isServer();
        int q = p.cqMod;
        int scnt = 0;
        int rcnt = 0;
        guard.progress();
        while (scnt < iters || rcnt < iters) {
            if (rcnt < iters && !(scnt < 1 && client)) {
                int n;
                while ((n = e.recvCq.poll(recvWc)) == 0) {
                    guard.idle("a message", rcnt, iters);
                }
                guard.progress();
                if (!recvWc.isSuccess(0) || recvWc.byteLen(0) != size) {
                    recvWc.checkSuccess(0, "receive of " + size + " bytes");
                    throw new IllegalStateException("received " + recvWc.byteLen(0) + " bytes, expected " + size);
                }
                rcnt++;
                if (rcnt + depth <= iters) {
                    e.qp.postRecv(recv);
                }
            }
            if (scnt < iters) {
                // stamped in warm-up rounds too: a branch the warm-up never took would be compiled
                // as a trap, and the measured run would pay for the deoptimisation and recompile
                posted[scnt] = System.nanoTime();
                scnt++;
                boolean signalled = scnt % q == 0 || scnt == iters;
                send.setFlags(0, signalled ? flags | SendFlags.SIGNALED : flags);
                e.qp.postSend(send);
                if (signalled) {
                    while (e.sendCq.poll(sendWc) == 0) {
                        guard.idle("a send completion", scnt - 1, iters);
                    }
                    guard.progress();
                    if (!sendWc.isSuccess(0)) {
                        sendWc.checkSuccess(0, "send of " + size + " bytes");
                    }
                }
            }
        }
        return measure ? LatencyResult.compute(size, iters, posted, scratch) : null;
    }

    @Override
    public void close() {
        send.close();
        recv.close();
        sendWc.close();
        recvWc.close();
    }
}
