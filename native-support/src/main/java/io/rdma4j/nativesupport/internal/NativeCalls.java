package io.rdma4j.nativesupport.internal;

import java.lang.foreign.Arena;

/** What the bindings share around {@code MethodHandle.invokeExact} of a downcall. */
public final class NativeCalls {
    private NativeCalls() {
    }

    /**
     * Converts what {@code invokeExact} threw into an unchecked exception: downcalls themselves
     * throw nothing checked, so anything else is a programming error worth surfacing as is.
     */
    public static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException("unexpected exception from a native call", t);
    }

    /**
     * Closes the shared arena whose segments an object lends to its native calls, from the
     * object's {@code revokeAccess}. The linker holds an argument's arena for the length of a call,
     * so the close is refused while a call on another thread still runs with one: then this throws,
     * naming the object and what such a call is ({@code heldBy}), and the object stays open, to be
     * closed again once that call returned.
     */
    public static void closeLent(Arena arena, String description, String heldBy) {
        try {
            arena.close();
        } catch (IllegalStateException e) {
            throw new IllegalStateException(description + " is in use by a native call on another thread (" + heldBy
                    + "); it stays open: close it again once that call returned", e);
        }
    }
}
