package io.rdma4j.transport.shm;

import io.rdma4j.nativesupport.internal.LibC;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Linux futexes on words of shared (file-backed) mappings, which the kernel keys by file and
 * offset, so a process can sleep on a peer's word and the peer wakes it. Through libc's
 * {@code syscall(2)} ({@link LibC}); every wait is bounded by its timeout, and a spurious or interrupted return
 * only means the caller re-checks its condition.
 */
final class Futex {
    private static final long SYS_FUTEX = 202; // x86-64
    private static final long FUTEX_WAIT = 0;
    private static final long FUTEX_WAKE = 1;
    private static final boolean AVAILABLE = "amd64".equals(System.getProperty("os.arch"))
            && "Linux".equals(System.getProperty("os.name")) && LibC.hasSyscall();
    /** Per-thread struct timespec, so that a wait allocates nothing. */
    private static final ThreadLocal<MemorySegment> TIMESPEC =
            ThreadLocal.withInitial(() -> Arena.global().allocate(16, 8));

    private Futex() {
    }

    /** Whether this platform has them (Linux x86-64, whose futex syscall number this uses); elsewhere callers poll. */
    static boolean available() {
        return AVAILABLE;
    }

    /** Sleeps while the int at address {@code word} (4-byte aligned) equals {@code value}, at most {@code nanos}. */
    static void await(long word, int value, long nanos) {
        MemorySegment ts = TIMESPEC.get();
        ts.set(ValueLayout.JAVA_LONG, 0, nanos / 1_000_000_000L);
        ts.set(ValueLayout.JAVA_LONG, 8, nanos % 1_000_000_000L);
        invoke(word, FUTEX_WAIT, value, ts.address());
    }

    /** Wakes every process sleeping on the int at address {@code word}. */
    static void wakeAll(long word) {
        invoke(word, FUTEX_WAKE, Integer.MAX_VALUE, 0);
    }

    /** A failed call (EAGAIN: the word changed; ETIMEDOUT; EINTR) only means the caller re-checks. */
    private static void invoke(long word, long op, long value, long timeout) {
        LibC.syscall(SYS_FUTEX, word, op, value, timeout, 0L);
    }
}
