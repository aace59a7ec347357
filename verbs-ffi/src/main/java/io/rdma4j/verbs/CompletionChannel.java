package io.rdma4j.verbs;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.nativesupport.internal.NativeCalls;
import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.ibv_comp_channel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static java.lang.foreign.ValueLayout.ADDRESS;

/**
 * A completion event channel: lets a thread sleep until a CQ that requested notification gets a
 * completion. Its fd is non-blocking and every wait is bounded (poll(2) with a timeout).
 */
public final class CompletionChannel extends NativeResource {
    private final DeviceContext context;
    private final MemorySegment channel;
    private final int fd;
    private final Map<Long, CompletionQueue> queues = new ConcurrentHashMap<>();
    private final Arena arena = Arena.ofShared();
    private final MemorySegment cqOut = arena.allocate(ADDRESS);
    private final MemorySegment cqContextOut = arena.allocate(ADDRESS);
    private final MemorySegment errno = Downcalls.captureState(arena);

    private CompletionChannel(DeviceContext context, MemorySegment channel) {
        super("CompletionChannel on " + context.name(), context);
        this.context = context;
        this.channel = channel;
        this.fd = ibv_comp_channel.fd(channel);
    }

    static CompletionChannel create(DeviceContext context) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Downcalls.captureState(arena);
            MemorySegment ch = (MemorySegment) IbvCalls.CREATE_COMP_CHANNEL.invokeExact(errno, context.segment());
            ch = Results.checkPointer(ch, errno, "ibv_create_comp_channel(" + context.name() + ")",
                    ibv_comp_channel.sizeof());
            CompletionChannel c = Results.own(ch, Verbs::ibv_destroy_comp_channel, h -> new CompletionChannel(context, h));
            try {
                Posix.setNonBlocking(c.fd, c.description());
            } catch (RuntimeException e) {
                c.close();
                throw e;
            }
            return c;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    MemorySegment segment() {
        ensureOpen();
        return channel;
    }

    void attach(CompletionQueue cq) {
        queues.put(cq.segment().address(), cq);
    }

    void detach(CompletionQueue cq, long address) {
        queues.remove(address, cq);
    }

    /**
     * Waits for the next completion event and acknowledges it. The CQ must have called
     * {@link CompletionQueue#requestNotification} before; re-arm it before polling it empty.
     *
     * @return the CQ the event is for
     * @throws VerbsTimeoutException when no event arrived within {@code timeoutMillis}
     */
    public synchronized CompletionQueue awaitEvent(long timeoutMillis) {
        ensureOpen();
        long start = System.nanoTime();
        while (true) {
            Posix.awaitReadable(fd, start, timeoutMillis, "a completion event on " + description());
            try {
                int rc = (int) IbvCalls.GET_CQ_EVENT.invokeExact(errno, channel, cqOut, cqContextOut);
                if (rc == 0) {
                    break;
                }
            } catch (Throwable t) {
                throw NativeCalls.rethrow(t);
            }
            int e = Errno.captured(errno);
            if (e != Verbs.EAGAIN()) {
                throw new VerbsException("ibv_get_cq_event(" + description() + ")", e);
            }
        }
        MemorySegment cq = cqOut.get(ADDRESS, 0);
        Verbs.ibv_ack_cq_events(cq, 1);
        CompletionQueue q = queues.get(cq.address());
        if (q == null) {
            throw new IllegalStateException("completion event for an unknown CQ 0x" + Long.toHexString(cq.address())
                    + " on " + description());
        }
        return q;
    }

    @Override
    protected void release() {
        try {
            Results.checkReturn(Verbs.ibv_destroy_comp_channel(channel),
                    "ibv_destroy_comp_channel(" + context.name() + "); close its CQs first");
        } finally {
            arena.close();
        }
    }
}
