package io.rdma4j.transport.shm;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Linux futexes on words of shared (file-backed) mappings, which the kernel keys by file and
 * offset, so a process can sleep on a peer's word and the peer wakes it. Through libc's
 * {@code syscall(2)}; every wait is bounded by its timeout, and a spurious or interrupted return
 * only means the caller re-checks its condition.
 */
final class Futex {
    private static final long SYS_FUTEX = 202; // x86-64
    private static final long FUTEX_WAIT = 0;
    private static final long FUTEX_WAKE = 1;
    private static final MethodHandle SYSCALL = bind();
    /** Per-thread struct timespec, so that a wait allocates nothing. */
    private static final ThreadLocal<MemorySegment> TIMESPEC =
            ThreadLocal.withInitial(() -> Arena.global().allocate(16, 8));

    private Futex() {
    }

    private static MethodHandle bind() {
        if (!"amd64".equals(System.getProperty("os.arch")) || !"Linux".equals(System.getProperty("os.name"))) {
            return null;
        }
        Linker linker = Linker.nativeLinker();
        return linker.defaultLookup().find("syscall").map(s -> linker.downcallHandle(s,
                // every argument a long (addresses included): nothing to wrap, nothing allocated
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_LONG),
                Linker.Option.firstVariadicArg(1))).orElse(null);
    }

    /** Whether this platform has them (Linux x86-64); elsewhere callers poll. */
    static boolean available() {
        return SYSCALL != null;
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

    private static void invoke(long word, long op, long value, long timeout) {
        try {
            long ignored = (long) SYSCALL.invokeExact(SYS_FUTEX, word, op, value, timeout, 0L, 0L);
        } catch (Throwable t) {
            throw new IllegalStateException("futex: " + t, t);
        }
    }
}
