package io.rdma4j.nativesupport.internal;

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
}
