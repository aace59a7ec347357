package io.rdma4j.verbs;

import io.rdma4j.nativesupport.ResourceClosedException;
import io.rdma4j.nativesupport.internal.NativeCalls;
import io.rdma4j.verbs.ffi.RdmaCm;
import io.rdma4j.verbs.ffi.rdma_cm_event;
import io.rdma4j.verbs.ffi.rdma_event_channel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.ADDRESS;

/**
 * An rdma_cm event channel with a non-blocking fd: every wait is a bounded poll(2), so a peer
 * that never answers produces a timeout that says what was awaited, never a hang. A wait polls in
 * slices and ends when the channel is closed from another thread (a server closing its listener
 * to stop a thread that waits for connection requests), and the channel is destroyed only once
 * no thread waits on it any more: destroyed under a waiter, its fd and struct would be gone
 * while the waiter still polls the one and then reads the other.
 */
@SuppressWarnings("restricted")
final class CmEventChannel implements AutoCloseable {
    /** The longest single poll of a wait: how late a close from another thread is noticed. */
    private static final long SLICE_MILLIS = 100;

    private final MemorySegment channel;
    private final int fd;
    private volatile boolean closed;
    /** Threads inside {@link #next} (guarded by this). */
    private int waiters;
    private boolean destroyed;

    private CmEventChannel(MemorySegment channel) {
        this.channel = channel;
        this.fd = rdma_event_channel.fd(channel);
    }

    static CmEventChannel create() {
        NativeLibrary.loadRdmaCm(); // before CmCalls initialises: see there
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Downcalls.captureState(arena);
            MemorySegment ch = (MemorySegment) CmCalls.CREATE_EVENT_CHANNEL.invokeExact(errno);
            CmEventChannel c = new CmEventChannel(Results.checkPointer(ch, errno, "rdma_create_event_channel",
                    rdma_event_channel.sizeof()));
            try {
                Posix.setNonBlocking(c.fd, "rdma_cm event channel");
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
        return channel;
    }

    /**
     * Waits for the next event and acknowledges it.
     *
     * @throws VerbsTimeoutException naming {@code awaited} when none arrives in time
     */
    CmEvent next(long timeoutMillis, String awaited) {
        synchronized (this) {
            checkOpen(awaited);
            waiters++;
        }
        try {
            return nextEvent(timeoutMillis, awaited);
        } finally {
            boolean destroy;
            synchronized (this) {
                destroy = --waiters == 0 && closed && !destroyed;
                destroyed |= destroy;
            }
            if (destroy) {
                RdmaCm.rdma_destroy_event_channel(channel);
            }
        }
    }

    private void checkOpen(String awaited) {
        if (closed) {
            throw new ResourceClosedException("the rdma_cm event channel (while waiting for " + awaited + ")");
        }
    }

    private CmEvent nextEvent(long timeoutMillis, String awaited) {
        long start = System.nanoTime();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Downcalls.captureState(arena);
            MemorySegment out = arena.allocate(ADDRESS);
            while (true) {
                awaitReadable(start, timeoutMillis, awaited);
                int rc = (int) CmCalls.GET_CM_EVENT.invokeExact(errno, channel, out);
                if (rc == 0) {
                    break;
                }
                int e = Errno.captured(errno);
                if (e != io.rdma4j.verbs.ffi.Verbs.EAGAIN()) {
                    throw new VerbsException("rdma_get_cm_event while waiting for " + awaited, e);
                }
            }
            MemorySegment ev = out.get(ADDRESS, 0).reinterpret(rdma_cm_event.sizeof());
            CmEvent copy = new CmEvent(rdma_cm_event.event(ev), rdma_cm_event.status(ev),
                    rdma_cm_event.id(ev).address(), rdma_cm_event.listen_id(ev).address());
            RdmaCm.rdma_ack_cm_event(ev);
            return copy;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** Waits for the fd in slices, checking before each whether the channel was closed. */
    private void awaitReadable(long start, long timeoutMillis, String awaited) {
        Posix.awaitReadable(fd, start, timeoutMillis, awaited, SLICE_MILLIS, () -> checkOpen(awaited));
        checkOpen(awaited);
    }

    /**
     * Waits for an event of type {@code expected}; any other event fails with a message that
     * names both (e.g. REJECTED with its status when connecting to a port nobody listens on).
     */
    CmEvent expect(int expected, long timeoutMillis, String awaited) {
        CmEvent e = next(timeoutMillis, awaited);
        if (e.type() != expected) {
            throw new VerbsException("while waiting for " + awaited + ": got " + e.typeName() + " (status "
                    + e.status() + (e.status() < 0 ? ", " + Errno.describe(-e.status()) : "") + ") instead of "
                    + CmEvent.name(expected));
        }
        return e;
    }

    /** Closes the channel; destroyed now, or by the last thread that still waits on it as it leaves. */
    @Override
    public void close() {
        boolean destroy;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            destroy = waiters == 0;
            destroyed |= destroy;
        }
        if (destroy) {
            RdmaCm.rdma_destroy_event_channel(channel);
        }
    }
}
