package io.rdma4j.transport.verbs;

import io.rdma4j.verbs.QueuePair;
import io.rdma4j.verbs.SendFlags;
import io.rdma4j.verbs.SendOpcode;
import io.rdma4j.verbs.SendWorkRequests;

/**
 * The send side of one QP: a doorbell batch of work requests, the sequence numbers of what was
 * posted and retired, and the selective-signalling rule.
 *
 * <p>Work requests are collected in a {@link SendWorkRequests} chain and posted with one
 * post_send call at {@link #flush()} (or when the batch is full). Only every
 * {@code signalInterval}-th request asks for a completion, plus the last request of a batch that
 * contains the final work request of some request (a "mark") after its last signalled one, so
 * every request whose completion someone waits for is eventually covered by a signalled
 * completion. A completion retires every earlier request of the QP (RC completes in order), which
 * is how unsignalled ones are accounted. One slot of the queue is held back for the drain marker
 * posted after the QP moved to ERROR ({@link #postDrainMarker()}).
 *
 * <p>A work request id is {@code qp index << 40 | sequence}; receive ids have bit 62 set.
 */
final class SendQueue implements AutoCloseable {
    static final long RECEIVE = 1L << 62;
    private static final int QP_SHIFT = 40;
    private static final long SEQUENCE_MASK = (1L << QP_SHIFT) - 1;

    /** Told about each mark (a request slot) whose work request retired. */
    interface Retirement {
        void retired(int slot, boolean success);
    }

    final int index;
    final QueuePair qp;
    private final SendWorkRequests batch;
    private final int depth;
    private final int[] marks;
    private final int signalInterval;
    private final int inlineMax;
    private long posted;
    private long retired;
    private int sinceSignal;
    private boolean unsignalledMark;
    /** Whether a clean close posted its fence on this queue ({@link VerbsConnection#fenceForClose}). */
    boolean fenced;
    /** Statistics (tests, diagnostics): work requests posted, post_send calls, signalled and inline requests. */
    private long workRequests;
    private long doorbells;
    private long signalled;
    private long inlined;

    /** @param maxDepth the most work requests outstanding at once ({@link VerbsConnection#sendDepth}) */
    SendQueue(int index, QueuePair qp, int maxDepth, int batchSize, int signalInterval) {
        this.index = index;
        this.qp = qp;
        this.depth = Math.min(qp.capabilities().maxSendWr() - 1, maxDepth);
        this.marks = new int[depth + 1];
        java.util.Arrays.fill(marks, -1);
        // at most half the queue between signals: unsignalled requests retire only with a later
        // signalled one, and a queue that fills with them (a rank that only receives posts only
        // CTS writes and credit reports, none of which asks for a signal) never drains
        this.signalInterval = Math.clamp(signalInterval, 1, Math.max(1, depth / 2));
        this.inlineMax = qp.capabilities().maxInlineData();
        this.batch = new SendWorkRequests(Math.max(1, Math.min(batchSize, depth)), 1);
    }

    /** Work requests that can still be added before the queue is full. */
    int free() {
        return depth - (int) (posted + batch.count() - retired);
    }

    int depth() {
        return depth;
    }

    /** Whether nothing is batched or outstanding. */
    boolean idle() {
        return posted == retired && batch.count() == 0;
    }

    /**
     * Whether some request still waits for a work request of this queue (batched or posted) to
     * complete. A scan of the queue's window, for the close path only: the data path keeps no count.
     */
    boolean marksOutstanding() {
        for (long s = retired; s < posted + batch.count(); s++) {
            if (marks[(int) (s % marks.length)] >= 0) {
                return true;
            }
        }
        return false;
    }

    boolean hasBatch() {
        return batch.count() > 0;
    }

    long workRequestsPosted() {
        return workRequests;
    }

    long doorbells() {
        return doorbells;
    }

    long signalled() {
        return signalled;
    }

    long inlined() {
        return inlined;
    }

    /**
     * Adds a work request to the batch (posting the batch first if it is full). {@code mark} is
     * the request slot this work request finishes on this QP, -1 if none; {@code signal} forces a
     * completion. The caller checked {@link #free()}.
     */
    void add(SendOpcode op, long localAddress, long length, int lkey, long remoteAddress, int rkey, int immediate,
             int mark, boolean signal) {
        add(op, localAddress, length, lkey, remoteAddress, rkey, immediate, mark, signal, inlines(length));
    }

    /**
     * As {@link #add(SendOpcode, long, long, int, long, int, int, int, boolean)}, inline only if
     * {@code inline} (which needs {@link #inlines}): a source whose bytes may still change until
     * the doorbell must not go inline.
     */
    void add(SendOpcode op, long localAddress, long length, int lkey, long remoteAddress, int rkey, int immediate,
             int mark, boolean signal, boolean inline) {
        if (batch.count() == batch.capacity()) {
            flush();
        }
        long sequence = posted + batch.count();
        int flags = 0;
        if (signal || ++sinceSignal >= signalInterval) {
            flags |= SendFlags.SIGNALED;
            sinceSignal = 0;
            unsignalledMark = false;
            signalled++;
        } else if (mark >= 0) {
            unsignalledMark = true;
        }
        if (inline && op != SendOpcode.RDMA_READ) {
            flags |= SendFlags.INLINE;
            inlined++;
        }
        int w = batch.add(wrId(sequence), op, flags);
        if (length > 0) {
            batch.addSge(w, localAddress, length, lkey);
        }
        batch.setRdma(w, remoteAddress, rkey);
        if (op == SendOpcode.RDMA_WRITE_WITH_IMM) {
            batch.setImmediate(w, immediate);
        }
        marks[(int) (sequence % marks.length)] = mark;
    }

    /**
     * Whether a write of {@code length} bytes goes inline: its bytes are copied into the work
     * request when it is added, so later changes to its source do not travel.
     */
    boolean inlines(long length) {
        return length > 0 && length <= inlineMax;
    }

    /** Posts the batch with one doorbell. The work requests count as posted even if post_send failed. */
    void flush() {
        int n = batch.count();
        if (n == 0) {
            return;
        }
        if (unsignalledMark) {
            batch.setFlags(n - 1, batch.flags(n - 1) | SendFlags.SIGNALED);
            signalled++;
            sinceSignal = 0;
            unsignalledMark = false;
        }
        try {
            PathTrace.event(PathTrace.DOORBELL, ((long) index << 32) | n);
            qp.postSend(batch);
            PathTrace.event(PathTrace.DOORBELL_DONE, n);
        } finally {
            batch.reset();
            posted += n;
            workRequests += n;
            doorbells++;
        }
    }

    /** Retires every work request up to the one {@code wrId} names; marks go to {@code sink}. */
    void retire(long wrId, boolean success, Retirement sink) {
        long sequence = retired + (((wrId & SEQUENCE_MASK) - retired) & SEQUENCE_MASK);
        if (sequence >= posted) {
            throw new IllegalStateException("completion for work request " + sequence + " of QP " + qp.qpNumber()
                    + ", which posted only " + posted);
        }
        for (long s = retired; s <= sequence; s++) {
            int i = (int) (s % marks.length);
            int m = marks[i];
            if (m >= 0) {
                marks[i] = -1;
                sink.retired(m, success);
            }
        }
        retired = sequence + 1;
    }

    /**
     * After the QP moved to ERROR: drops what was batched and posts one signalled work request,
     * which the provider completes with a flush error after every earlier one; once it retired
     * ({@link #idle()}), the NIC is done with everything this queue ever posted.
     */
    void postDrainMarker() {
        batch.reset();
        long sequence = posted;
        int w = batch.add(wrId(sequence), SendOpcode.RDMA_WRITE, SendFlags.SIGNALED);
        batch.setRdma(w, 0, 0);
        marks[(int) (sequence % marks.length)] = -1;
        try {
            qp.postSend(batch);
        } finally {
            batch.reset();
            posted++;
        }
    }

    /** Drops the work requests batched but not posted; their marks go to {@code sink} as failed. */
    void dropBatch(Retirement sink) {
        for (long s = posted; s < posted + batch.count(); s++) {
            int i = (int) (s % marks.length);
            int m = marks[i];
            if (m >= 0) {
                marks[i] = -1;
                sink.retired(m, false);
            }
        }
        batch.reset();
        unsignalledMark = false;
    }

    static int qpIndexOf(long wrId) {
        return (int) ((wrId >>> QP_SHIFT) & 0xFFFF);
    }

    private long wrId(long sequence) {
        return ((long) index << QP_SHIFT) | (sequence & SEQUENCE_MASK);
    }

    @Override
    public void close() {
        batch.close();
    }
}
