package io.rdma4j.verbs;

import io.rdma4j.nativesupport.ResourceClosedException;
import io.rdma4j.nativesupport.internal.NativeCalls;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;

/**
 * A verbs object's handle as Java code passes it to native calls: a segment of a shared arena
 * that the object closes when it is closed (before its destroy). The linker holds an argument's
 * arena for the length of a call, so closing the object while another thread is inside a call
 * with the handle (a post, a poll, the creation of a child on it) is refused instead of freeing
 * the object under that call, and a call that starts after the close fails in Java instead of
 * reaching freed memory. The destroy itself takes the raw handle, which the object keeps.
 */
@SuppressWarnings("restricted")
final class ScopedHandle {
    private final Arena arena = Arena.ofShared();
    private final MemorySegment handle;

    ScopedHandle(MemorySegment raw) {
        this.handle = raw.reinterpret(arena, null);
    }

    /** The handle for native calls; a call that gets it after {@link #revoke} throws. */
    MemorySegment segment() {
        return handle;
    }

    /** Scratch memory of the object's calls (e.g. a bad_wr out-pointer), held and revoked with the handle. */
    MemorySegment allocate(MemoryLayout layout) {
        return arena.allocate(layout);
    }

    /**
     * Ends the handle's use from Java, from the object's {@code revokeAccess}. Refused while a call
     * holds it; the object then stays open and may be closed again once the call returned.
     */
    void revoke(String description) {
        NativeCalls.closeLent(arena, description, "a post, a poll or the creation of an object on it");
    }

    /**
     * What a failed call through the handle throws: a call refused because the handle was revoked
     * between the object's open check and the call names the closed object, anything else is
     * rethrown as it is.
     */
    RuntimeException rethrow(Throwable t, String description) {
        if (t instanceof IllegalStateException && !arena.scope().isAlive()) {
            ResourceClosedException closed = new ResourceClosedException(description);
            closed.initCause(t);
            return closed;
        }
        return NativeCalls.rethrow(t);
    }
}
