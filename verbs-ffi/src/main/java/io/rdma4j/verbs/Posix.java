package io.rdma4j.verbs;

import io.rdma4j.nativesupport.internal.Checks;
import io.rdma4j.nativesupport.internal.LibC;
import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.pollfd;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The two POSIX calls (through {@link LibC}) that make the blocking verbs/rdma_cm event calls
 * bounded: the event fd is
 * switched to non-blocking once, and every wait is a poll(2) with a timeout before the (then
 * non-blocking) read of the event.
 */
final class Posix {
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
     * Waits until {@code fd} is readable or {@code timeoutMillis} passed; EINTR restarts the wait
     * with the time that is left.
     *
     * @throws VerbsTimeoutException naming {@code awaited} when the time ran out
     */
    static void awaitReadable(int fd, long timeoutMillis, String awaited) {
        Checks.inRange("timeoutMillis", timeoutMillis, 0, Integer.MAX_VALUE);
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment fds = pollfd.allocate(arena);
            while (true) {
                long left = Math.max(0, (deadline - System.nanoTime()) / 1_000_000L);
                pollfd.fd(fds, fd);
                pollfd.events(fds, (short) Verbs.POLLIN());
                pollfd.revents(fds, (short) 0);
                int n = LibC.poll(fds, 1, (int) left);
                if (n > 0) {
                    return;
                }
                if (n == 0) {
                    throw new VerbsTimeoutException(awaited, timeoutMillis);
                }
                if (-n != Verbs.EINTR()) {
                    throw new VerbsException("poll while waiting for " + awaited, -n);
                }
            }
        }
    }
}
