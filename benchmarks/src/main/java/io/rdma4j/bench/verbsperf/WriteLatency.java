package io.rdma4j.bench.verbsperf;

import io.rdma4j.verbs.SendFlags;
import io.rdma4j.verbs.SendOpcode;
import io.rdma4j.verbs.SendWorkRequests;
import io.rdma4j.verbs.WorkCompletions;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The ping-pong of ib_write_lat (perftest's run_iter_lat_write): the server writes first; each
 * side waits until the last byte of the peer's write, a counter, changes in its memory, then
 * writes its own counter into the peer's memory. Arrival is seen by watching memory, not the
 * CQ, so the round trip holds no receive completion.
 */
final class WriteLatency implements AutoCloseable {
    /** Opaque access: the JIT must re-read the byte the peer's write changes, and not sink the store past the post. */
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();

    private final PerfEndpoint e;
    private final PerfParams p;
    private final OobChannel oob;
    private final SendWorkRequests send = new SendWorkRequests(1, 1);
    private final WorkCompletions wc = new WorkCompletions(1);
    private final long[] posted;
    private final long[] scratch;
    private final long remoteAddress;
    private final int rkey;
    private final StallGuard guard;
    private int size;

    WriteLatency(PerfEndpoint e, PerfParams p, OobChannel oob, PeerInfo remote) {
        this.e = e;
        this.p = p;
        this.oob = oob;
        this.posted = new long[Math.max(p.iters, p.maxWarmupRound())];
        this.scratch = new long[posted.length];
        this.remoteAddress = remote.vaddr();
        this.rkey = remote.rkey();
        this.guard = new StallGuard(p.oobTimeoutSeconds * 1_000_000_000L, oob.peer());
    }

    void prepare(int size) {
        this.size = size;
        int flags = SendFlags.SIGNALED | (size <= e.inlineSize ? SendFlags.INLINE : SendFlags.NONE);
        send.reset();
        int w = send.add(1, SendOpcode.RDMA_WRITE, flags);
        send.addSge(w, e.mr, 0, size);
        send.setRdma(w, remoteAddress, rkey);
    }

    LatencyResult run(int iters, boolean measure) throws IOException {
        long postAt = size - 1;
        long pollAt = e.half + size - 1;
        // counters restart at 1: clear what an earlier run left, before the peer may write again
        e.buf.asSlice(0, size).fill((byte) 0);
        e.buf.asSlice(e.half, size).fill((byte) 0);
        oob.barrier((measure ? "write_lat " : "write_lat warm-up ") + size);
        boolean server = p.isServer();
        int scnt = 0;
        int ccnt = 0;
        int rcnt = 0;
        guard.progress();
        while (scnt < iters || ccnt < iters || rcnt < iters) {
            if (rcnt < iters && !(scnt < 1 && server)) {
                rcnt++;
                byte expected = (byte) rcnt;
                while ((byte) BYTE.getOpaque(e.buf, pollAt) != expected) {
                    guard.idle("the peer's RDMA write", rcnt - 1, iters);
                }
                guard.progress();
            }
            if (scnt < iters) {
                // stamped in warm-up rounds too: a branch the warm-up never took would be compiled
                // as a trap, and the measured run would pay for the deoptimisation and recompile
                posted[scnt] = System.nanoTime();
                BYTE.setRelease(e.buf, postAt, (byte) ++scnt);
                e.qp.postSend(send);
            }
            if (ccnt < iters) {
                while (e.sendCq.poll(wc) == 0) {
                    guard.idle("a write completion", ccnt, iters);
                }
                guard.progress();
                if (!wc.isSuccess(0)) {
                    wc.checkSuccess(0, "RDMA write of " + size + " bytes");
                }
                ccnt++;
            }
        }
        return measure ? LatencyResult.compute(size, iters, posted, scratch) : null;
    }

    @Override
    public void close() {
        send.close();
        wc.close();
    }
}
