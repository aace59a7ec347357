package io.rdma4j.verbs;

import io.rdma4j.nativesupport.internal.LibC;
import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.pollfd;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;

/**
 * The two POSIX calls (through {@link LibC}) that make the blocking verbs/rdma_cm event calls
 * bounded: the event fd is
 * switched to non-blocking once, and every wait is a poll(2) with a timeout before the (then
 * non-blocking) read of the event.
 */
final class Posix {
    private static final Runnable NOTHING = () -> { };

    private Posix() {
    }

    /** Sets O_NONBLOCK on {@code fd}; {@code owner} names the fd in errors. */
    static void setNonBlocking(int fd, String owner) {
        int flags = LibC.fcntl(fd, Verbs.F_GETFL(), 0);
        if (flags < 0) {
            throw new VerbsException("fcntl(F_GETFL) on the fd of " + owner, -flags);
        }
        int rc = LibC.fcntl(fd, Verbs.F_SETFL(), flags | Verbs.O_NONBLOCK());
        if (rc < 0) {
            throw new VerbsException("fcntl(F_SETFL, O_NONBLOCK) on the fd of " + owner, -rc);
        }
    }

    /**
     * Waits until {@code fd} is readable or {@code timeoutMillis} since {@code startNanos} (a
     * {@link System#nanoTime()}) passed; EINTR restarts the wait with the time that is left. A
     * caller that reads in a loop passes the loop's start, so every pass waits only for what is
     * left of the one timeout. {@link Long#MAX_VALUE} (or any wait too long to count in
     * nanoseconds) waits for good, in polls of at most {@link Integer#MAX_VALUE} ms each.
     *
     * A negative timeout is no wait (callers pass what is left of their own deadlines).
     *
     * @throws VerbsTimeoutException naming {@code awaited} and {@code timeoutMillis} when the time ran out
     */
    static void awaitReadable(int fd, long startNanos, long timeoutMillis, String awaited) {
        awaitReadable(fd, startNanos, timeoutMillis, awaited, Integer.MAX_VALUE, NOTHING);
    }

    /**
     * {@link #awaitReadable(int, long, long, String)} in polls of at most {@code sliceMillis},
     * with {@code beforeEachPoll} run before each (it throws to end the wait: a close from another
     * thread, say).
     */
    static void awaitReadable(int fd, long startNanos, long timeoutMillis, String awaited, long sliceMillis,
                              Runnable beforeEachPoll) {
        long timeoutNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(0, timeoutMillis)); // saturates
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment fds = pollfd.allocate(arena);
            while (true) {
                long left = timeoutNanos - (System.nanoTime() - startNanos);
                long leftMillis = Math.ceilDiv(Math.max(0, left), 1_000_000L); // rounded up: never a busy poll(0) loop
                beforeEachPoll.run();
                pollfd.fd(fds, fd);
                pollfd.events(fds, (short) Verbs.POLLIN());
                pollfd.revents(fds, (short) 0);
                int n = LibC.poll(fds, 1, (int) Math.min(Math.min(Integer.MAX_VALUE, sliceMillis), leftMillis));
                if (n > 0) {
                    return;
                }
                if (n == 0) {
                    if (timeoutNanos - (System.nanoTime() - startNanos) <= 0) {
                        throw new VerbsTimeoutException(awaited, timeoutMillis);
                    }
                    continue; // one slice of a longer wait
                }
                if (-n != Verbs.EINTR()) {
                    throw new VerbsException("poll while waiting for " + awaited, -n);
                }
            }
        }
    }
}
