package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.Map;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/** errno values as Linux reports them: symbolic names, strerror text, and the capture-state slot. */
@SuppressWarnings("restricted")
public final class Errno {
    /** Names of the errno values the verbs and rdma_cm calls report (values from the generated headers). */
    private static final Map<Integer, String> NAMES = Map.ofEntries(
            Map.entry(Verbs.EPERM(), "EPERM"),
            Map.entry(Verbs.ENOENT(), "ENOENT"),
            Map.entry(Verbs.EINTR(), "EINTR"),
            Map.entry(Verbs.EIO(), "EIO"),
            Map.entry(Verbs.EAGAIN(), "EAGAIN"),
            Map.entry(Verbs.ENOMEM(), "ENOMEM"),
            Map.entry(Verbs.EACCES(), "EACCES"),
            Map.entry(Verbs.EFAULT(), "EFAULT"),
            Map.entry(Verbs.EBUSY(), "EBUSY"),
            Map.entry(Verbs.EEXIST(), "EEXIST"),
            Map.entry(Verbs.ENODEV(), "ENODEV"),
            Map.entry(Verbs.EINVAL(), "EINVAL"),
            Map.entry(Verbs.ENOSPC(), "ENOSPC"),
            Map.entry(Verbs.ENOSYS(), "ENOSYS"),
            Map.entry(Verbs.EOPNOTSUPP(), "EOPNOTSUPP"),
            Map.entry(Verbs.EADDRINUSE(), "EADDRINUSE"),
            Map.entry(Verbs.EADDRNOTAVAIL(), "EADDRNOTAVAIL"),
            Map.entry(Verbs.ENETUNREACH(), "ENETUNREACH"),
            Map.entry(Verbs.ECONNRESET(), "ECONNRESET"),
            Map.entry(Verbs.ETIMEDOUT(), "ETIMEDOUT"),
            Map.entry(Verbs.ECONNREFUSED(), "ECONNREFUSED"),
            Map.entry(Verbs.EHOSTUNREACH(), "EHOSTUNREACH"));

    /** Layout of the buffer {@link Linker.Option#captureCallState} fills. */
    static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private Errno() {
    }

    /** Reads errno from a capture-state buffer filled by a downcall made with {@link Downcalls#errnoCapturing}. */
    static int captured(MemorySegment captureState) {
        return (int) ERRNO.get(captureState, 0L);
    }

    public static String name(int errno) {
        String n = NAMES.get(errno);
        return n != null ? n : "errno " + errno;
    }

    /** "ENOSYS (Function not implemented)". */
    public static String describe(int errno) {
        if (errno == 0) {
            return "no errno reported";
        }
        String text = Strerror.text(errno);
        return NAMES.containsKey(errno) ? name(errno) + " (" + text + ")" : "errno " + errno + " (" + text + ")";
    }

    /** libc's strerror, looked up lazily so that this class loads even where libc lookup fails. */
    private static final class Strerror {
        private static final MethodHandle STRERROR = Linker.nativeLinker().defaultLookup().find("strerror")
                .map(a -> Linker.nativeLinker().downcallHandle(a, FunctionDescriptor.of(ADDRESS, JAVA_INT)))
                .orElse(null);

        static String text(int errno) {
            if (STRERROR == null) {
                return "unknown error";
            }
            try {
                MemorySegment s = (MemorySegment) STRERROR.invokeExact(errno);
                return s.reinterpret(256).getString(0);
            } catch (Throwable t) {
                return "unknown error";
            }
        }
    }
}
