package io.rdma4j.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The three ways rdma4j binds a native function. The jextract-generated handles do not capture
 * errno, and a later JVM-internal call can overwrite errno before Java reads it, so every verb
 * that reports failure as NULL/-1 + errno is bound here with {@code captureCallState("errno")}.
 */
@SuppressWarnings("restricted")
final class Downcalls {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final Linker.Option CRITICAL = Linker.Option.critical(false);

    private Downcalls() {
    }

    /** A handle whose first parameter is a capture-state segment (see {@link #captureState}). */
    static MethodHandle errnoCapturing(MemorySegment function, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(function, descriptor, CAPTURE_ERRNO);
    }

    /**
     * A handle for a short, non-blocking data-path function reached through a provider's function
     * pointer (post_send, poll_cq, ...). {@code critical} skips the Java-to-native thread state
     * transition, which is most of the fixed cost of such a call.
     */
    static MethodHandle critical(MemorySegment function, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(function, descriptor, CRITICAL);
    }

    /** A plain handle for a function pointer read at run time (e.g. verbs_context.query_port). */
    static MethodHandle plain(MemorySegment function, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(function, descriptor);
    }

    /** A capture-state buffer for one control-path call; lives as long as {@code arena}. */
    static MemorySegment captureState(Arena arena) {
        return arena.allocate(Errno.CAPTURE_LAYOUT);
    }
}
