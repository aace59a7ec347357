package io.rdma4j.nativesupport.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The libc calls rdma4j makes itself (the one binding of them): open, close, flock, getpagesize,
 * fcntl, poll, syscall (futexes), sched_setaffinity, madvise, memmove (for {@link BulkCopy}),
 * and getsockname, getpeername, getsockopt and setsockopt (the socket options NIO does not offer). A failed call
 * returns {@code -errno}, the kernel's own convention, so each caller names the error in its
 * own terms and no call allocates (errno is captured into a per-thread segment). A function
 * this platform's libc lacks makes its method throw {@link UnsupportedOperationException};
 * {@link #hasSyscall()} and {@link #hasMemmove()} ask first.
 */
@SuppressWarnings("restricted") // downcalls with the exact C signatures of these functions
public final class LibC {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final ThreadLocal<MemorySegment> STATE = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(CALL_STATE));

    private static final MethodHandle OPEN = bind("open", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
            Linker.Option.firstVariadicArg(2));
    private static final MethodHandle CLOSE = bind("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle FLOCK = bind("flock", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle GETPAGESIZE = bind("getpagesize", FunctionDescriptor.of(JAVA_INT));
    private static final MethodHandle FCNTL = bind("fcntl", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT),
            Linker.Option.firstVariadicArg(2));
    private static final MethodHandle POLL = bind("poll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    // every argument a long (addresses included): nothing to wrap, nothing allocated
    private static final MethodHandle SYSCALL = bind("syscall", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG), Linker.Option.firstVariadicArg(1));
    private static final MethodHandle SCHED_SETAFFINITY = bind("sched_setaffinity",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS));
    private static final MethodHandle GETSOCKNAME = bind("getsockname", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle GETPEERNAME = bind("getpeername", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle GETSOCKOPT = bind("getsockopt",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle SETSOCKOPT = bind("setsockopt",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle MADVISE = bind("madvise", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT));
    // no errno (memmove cannot fail); the addresses and the result (dst) as longs: nothing to
    // wrap, nothing allocated
    private static final MethodHandle MEMMOVE = LINKER.defaultLookup().find("memmove")
            .map(m -> LINKER.downcallHandle(m, FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG)))
            .orElse(null);
    private static final long PAGE_SIZE = pageSize0();

    private LibC() {
    }

    private static MethodHandle bind(String name, FunctionDescriptor descriptor, Linker.Option... options) {
        Linker.Option[] all = new Linker.Option[options.length + 1];
        System.arraycopy(options, 0, all, 0, options.length);
        all[options.length] = Linker.Option.captureCallState("errno");
        return LINKER.defaultLookup().find(name).map(s -> LINKER.downcallHandle(s, descriptor, all)).orElse(null);
    }

    private static MethodHandle require(MethodHandle h, String name) {
        if (h == null) {
            throw new UnsupportedOperationException(name + " is not in this platform's C library");
        }
        return h;
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    /** The page size of this machine. */
    public static long pageSize() {
        return PAGE_SIZE;
    }

    private static long pageSize0() {
        try {
            return (int) require(GETPAGESIZE, "getpagesize").invokeExact(STATE.get());
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** Whether {@link #open} and {@link #flock} are there. */
    public static boolean hasFlock() {
        return OPEN != null && FLOCK != null;
    }

    /** open(2) of an existing file (no O_CREAT, so no mode): the descriptor, or -errno. */
    public static int open(String path, int flags) {
        MemorySegment state = STATE.get();
        try (Arena arena = Arena.ofConfined()) {
            int rc = (int) require(OPEN, "open").invokeExact(state, arena.allocateFrom(path), flags, 0);
            return rc >= 0 ? rc : -errno(state);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** flock(2): 0, or -errno. */
    public static int flock(int fd, int operation) {
        MemorySegment state = STATE.get();
        try {
            int rc = (int) require(FLOCK, "flock").invokeExact(state, fd, operation);
            return rc == 0 ? 0 : -errno(state);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** close(2): 0, or -errno. */
    public static int close(int fd) {
        MemorySegment state = STATE.get();
        try {
            int rc = (int) require(CLOSE, "close").invokeExact(state, fd);
            return rc == 0 ? 0 : -errno(state);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** fcntl(2) with an int argument: the result (&gt;= 0), or -errno. */
    public static int fcntl(int fd, int cmd, int arg) {
        MemorySegment state = STATE.get();
        try {
            int rc = (int) require(FCNTL, "fcntl").invokeExact(state, fd, cmd, arg);
            return rc >= 0 ? rc : -errno(state);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** poll(2) on {@code nfds} struct pollfd at {@code fds}: the number ready, 0 on timeout, or -errno. */
    public static int poll(MemorySegment fds, long nfds, int timeoutMillis) {
        MemorySegment state = STATE.get();
        try {
            int rc = (int) require(POLL, "poll").invokeExact(state, fds, nfds, timeoutMillis);
            return rc >= 0 ? rc : -errno(state);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** Whether {@link #syscall} is there (Linux). */
    public static boolean hasSyscall() {
        return SYSCALL != null;
    }

    /** syscall(2) with five arguments: the result (&gt;= 0), or -errno. */
    public static long syscall(long number, long a1, long a2, long a3, long a4, long a5) {
        MemorySegment state = STATE.get();
        try {
            long rc = (long) require(SYSCALL, "syscall").invokeExact(state, number, a1, a2, a3, a4, a5);
            return rc >= 0 ? rc : -errno(state);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** Whether {@link #memmove} is there. */
    public static boolean hasMemmove() {
        return MEMMOVE != null;
    }

    /**
     * memmove(3): {@code bytes} bytes from address {@code src} to address {@code dst} (the ranges
     * may overlap). Raw addresses: the caller has checked both ranges and keeps their memory
     * alive during the call ({@link BulkCopy}).
     */
    public static void memmove(long dst, long src, long bytes) {
        try {
            long ignored = (long) require(MEMMOVE, "memmove").invokeExact(dst, src, bytes);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** madvise(2) on the {@code bytes} bytes at address {@code address} (page-aligned): 0, or -errno. */
    public static int madvise(long address, long bytes, int advice) {
        MemorySegment state = STATE.get();
        try {
            int rc = (int) require(MADVISE, "madvise").invokeExact(state, address, bytes, advice);
            return rc == 0 ? 0 : -errno(state);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** sched_setaffinity(2) with a cpu_set_t of {@code maskBytes} at {@code mask}: 0, or -errno. */
    public static int schedSetaffinity(int pid, long maskBytes, MemorySegment mask) {
        MemorySegment state = STATE.get();
        try {
            int rc = (int) require(SCHED_SETAFFINITY, "sched_setaffinity").invokeExact(state, pid, maskBytes, mask);
            return rc == 0 ? 0 : -errno(state);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** Whether the socket calls ({@link #getsockname}, {@link #getpeername}, {@link #getsockopt}, {@link #setsockopt}) are there. */
    public static boolean hasSocketCalls() {
        return GETSOCKNAME != null && GETPEERNAME != null && GETSOCKOPT != null && SETSOCKOPT != null;
    }

    /**
     * getsockname(2) into {@code address} (its size is the room given): the length of the
     * address the socket is bound to, or -errno.
     */
    public static int getsockname(int fd, MemorySegment address) {
        return socketAddress(require(GETSOCKNAME, "getsockname"), fd, address);
    }

    /** getpeername(2), as {@link #getsockname}: the length of the peer's address, or -errno. */
    public static int getpeername(int fd, MemorySegment address) {
        return socketAddress(require(GETPEERNAME, "getpeername"), fd, address);
    }

    private static int socketAddress(MethodHandle call, int fd, MemorySegment address) {
        MemorySegment state = STATE.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment length = arena.allocateFrom(JAVA_INT, (int) Math.min(Integer.MAX_VALUE, address.byteSize()));
            int rc = (int) call.invokeExact(state, fd, address, length);
            return rc == 0 ? length.get(JAVA_INT, 0) : -errno(state);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** getsockopt(2) into {@code value} (its size is the room given): the option's length, or -errno. */
    public static int getsockopt(int fd, int level, int name, MemorySegment value) {
        MemorySegment state = STATE.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment length = arena.allocateFrom(JAVA_INT, (int) Math.min(Integer.MAX_VALUE, value.byteSize()));
            int rc = (int) require(GETSOCKOPT, "getsockopt").invokeExact(state, fd, level, name, value, length);
            return rc == 0 ? length.get(JAVA_INT, 0) : -errno(state);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** setsockopt(2) with all of {@code value}: 0, or -errno. */
    public static int setsockopt(int fd, int level, int name, MemorySegment value) {
        MemorySegment state = STATE.get();
        try {
            int rc = (int) require(SETSOCKOPT, "setsockopt").invokeExact(state, fd, level, name, value,
                    (int) Math.min(Integer.MAX_VALUE, value.byteSize()));
            return rc == 0 ? 0 : -errno(state);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }
}
