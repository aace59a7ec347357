package io.rdma4j.bench.verbsperf;

import io.rdma4j.verbs.SendFlags;
import io.rdma4j.verbs.SendOpcode;
import io.rdma4j.verbs.SendWorkRequests;
import io.rdma4j.verbs.WorkCompletions;

/**
 * The client loop of ib_write_bw (perftest's run_iter_bw): keeps up to TX depth RDMA writes
 * outstanding, posts them a post list at a time (one post_send, one doorbell per list), asks
 * for a completion every CQ-moderation-th request and polls completions in batches of 16.
 * Nothing is allocated per message: the work requests, the completion array and the
 * timestamp arrays are made once.
 */
final class WriteBandwidth implements AutoCloseable {
    /** perftest polls this many completions per ibv_poll_cq (CTX_POLL_BATCH). */
    static final int POLL_BATCH = 16;

    private final PerfEndpoint e;
    private final PerfParams p;
    private final SendWorkRequests wrs;
    private final WorkCompletions wcs = new WorkCompletions(POLL_BATCH);
    private final long[] posted;
    private final long[] completed;
    private final long remoteAddress;
    private final int rkey;
    private final StallGuard guard;
    private int size;
    private int baseFlags;
    /** Message slots in the cycle buffer (1: every message at offset 0) and their distance. */
    private int slots;
    private long stride;

    WriteBandwidth(PerfEndpoint e, PerfParams p, PeerInfo remote) {
        this.e = e;
        this.p = p;
        this.wrs = new SendWorkRequests(p.postList, 1);
        this.posted = new long[Math.max(p.iters, p.maxWarmupRound())];
        this.completed = new long[posted.length];
        this.remoteAddress = remote.vaddr();
        this.rkey = remote.rkey();
        this.guard = new StallGuard(p.oobTimeoutSeconds * 1_000_000_000L, remote.describe("remote").trim());
    }

    /** Sets up the work requests for messages of {@code size} bytes. */
    void prepare(int size) {
        this.size = size;
        baseFlags = size <= e.inlineSize ? SendFlags.INLINE : SendFlags.NONE;
        stride = PerfEndpoint.stride(size);
        slots = PerfEndpoint.cycles(size) ? (int) (PerfEndpoint.CYCLE_BUFFER / stride) : 1;
        if (p.postList > 1) {
            // one fixed list, walking through the cycle buffer within the list, as perftest builds it
            wrs.reset();
            for (int j = 0; j < p.postList; j++) {
                fill(j, j, (j + 1) % p.cqMod == 0);
            }
        }
    }

    private void fill(int wrId, int index, boolean signalled) {
        long offset = (index % slots) * stride;
        int w = wrs.add(wrId, SendOpcode.RDMA_WRITE, baseFlags | (signalled ? SendFlags.SIGNALED : 0));
        wrs.addSge(w, e.mr, offset, size);
        wrs.setRdma(w, remoteAddress + offset, rkey);
    }

    /** Runs {@code iters} writes; returns the report row when {@code measure}. */
    BandwidthResult run(int iters, boolean measure) {
        int l = p.postList;
        int q = p.cqMod;
        int depth = p.txDepth;
        boolean peak = !p.noPeak;
        int scnt = 0;
        int ccnt = 0;
        guard.progress();
        if (!peak) {
            posted[0] = System.nanoTime();
        }
        while (scnt < iters || ccnt < iters) {
            while (scnt < iters && scnt + l <= depth + ccnt) {
                if (l == 1) {
                    // the single request is rewritten in place: next address in the cycle, signalled
                    // every q-th and at the last one
                    wrs.reset();
                    fill(scnt, scnt, (scnt + 1) % q == 0 || scnt == iters - 1);
                }
                if (peak) {
                    posted[scnt] = System.nanoTime();
                }
                e.qp.postSend(wrs);
                scnt += l;
            }
            if (ccnt < iters) {
                int n = e.sendCq.poll(wcs);
                if (n == 0) {
                    guard.idle("write completions", ccnt, iters);
                    continue;
                }
                guard.progress();
                for (int i = 0; i < n; i++) {
                    if (!wcs.isSuccess(i)) {
                        wcs.checkSuccess(i, "RDMA write of " + size + " bytes");
                    }
                    ccnt += Math.min(q, iters - ccnt);
                    if (peak) {
                        completed[ccnt - 1] = System.nanoTime();
                    }
                }
            }
        }
        if (!peak) {
            completed[0] = System.nanoTime();
        }
        return measure ? BandwidthResult.compute(size, iters, l, q, posted, completed, !peak) : null;
    }

    @Override
    public void close() {
        wrs.close();
        wcs.close();
    }
}
