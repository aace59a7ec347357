package io.rdma4j.verbs;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.nativesupport.internal.Checks;
import io.rdma4j.nativesupport.internal.NativeCalls;
import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.ibv_cq;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A completion queue, polled through the provider's poll_cq without allocating. */
public final class CompletionQueue extends NativeResource {
    private final MemorySegment cq;
    /** The handle that polls and the creation of QPs on this CQ pass: revoked on close. */
    private final ScopedHandle scoped;
    private final DataPathOps ops;
    private final CompletionChannel channel;
    private final int capacity;

    private CompletionQueue(DeviceContext context, MemorySegment cq, CompletionChannel channel) {
        super("CompletionQueue on " + context.name(), context, channel);
        this.cq = cq;
        this.scoped = new ScopedHandle(cq);
        this.ops = context.dataPath();
        this.channel = channel;
        this.capacity = ibv_cq.cqe(cq);
    }

    static CompletionQueue create(DeviceContext context, int minEntries, CompletionChannel channel, int vector) {
        Checks.positive("minEntries", minEntries);
        Checks.inRange("vector", vector, 0, Math.max(0, context.completionVectors() - 1));
        MemorySegment ch = channel == null ? MemorySegment.NULL : channel.segment();
        try (CallLease lease = new CallLease("ibv_create_cq on " + context.name(), channel);
             Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Downcalls.captureState(arena);
            MemorySegment cq = (MemorySegment) IbvCalls.CREATE_CQ.invokeExact(errno, context.segment(), minEntries,
                    MemorySegment.NULL, ch, vector);
            cq = Results.checkPointer(cq, errno, "ibv_create_cq(" + context.name() + ", " + minEntries + " entries)",
                    ibv_cq.sizeof());
            CompletionQueue q = Results.own(cq, Verbs::ibv_destroy_cq, h -> new CompletionQueue(context, h, channel));
            if (channel != null) {
                channel.attach(q);
            }
            return q;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    MemorySegment segment() {
        ensureOpen();
        return scoped.segment();
    }

    /** The number of entries the provider actually allocated (at least what was asked for). */
    public int capacity() {
        return capacity;
    }

    /**
     * Polls up to {@code wcs.capacity()} completions into {@code wcs}; returns how many
     * (0 when the CQ is empty). Allocation-free.
     */
    public int poll(WorkCompletions wcs) {
        int n;
        try {
            n = (int) ops.pollCq.invokeExact(segment(), wcs.capacity(), wcs.segment());
        } catch (Throwable t) {
            throw scoped.rethrow(t, description());
        }
        if (n < 0) {
            wcs.filled(0); // the last batch must not read as this poll's
            throw new VerbsException("poll_cq(" + description() + ") failed with " + n);
        }
        wcs.filled(n);
        return n;
    }

    /** Arms the CQ so that its next completion (or next solicited one) signals its channel. */
    public void requestNotification(boolean solicitedOnly) {
        if (channel == null) {
            throw new IllegalStateException(description() + " has no completion channel to notify");
        }
        int rc;
        try {
            rc = (int) ops.reqNotifyCq.invokeExact(segment(), solicitedOnly ? 1 : 0);
        } catch (Throwable t) {
            throw scoped.rethrow(t, description());
        }
        if (rc != 0) { // the message only then: arming is on the event-driven completion path
            Results.checkReturn(rc, "req_notify_cq(" + description() + ")");
        }
    }

    /** A close while another thread polls is refused rather than destroying the CQ under the poll. */
    @Override
    protected void revokeAccess() {
        scoped.revoke(description());
    }

    @Override
    protected void release() {
        if (channel != null) {
            channel.detach(this, cq.address());
        }
        Results.checkReturn(Verbs.ibv_destroy_cq(cq), "ibv_destroy_cq(" + description() + ")");
    }
}
