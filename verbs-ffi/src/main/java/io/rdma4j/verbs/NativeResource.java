package io.rdma4j.verbs;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Base of every verbs object that owns a native handle. Each object names the objects it
 * depends on (a QP: its PD and CQs; an MR: its PD; everything: the device context). close() is
 * idempotent and first closes the dependents still open, newest first, so forgetting one cannot
 * leak it or make a destroy fail with EBUSY (a CQ that a live QP still uses).
 */
public abstract class NativeResource implements AutoCloseable {
    private final String description;
    private final NativeResource[] parents;
    private final Set<NativeResource> children = new LinkedHashSet<>();
    private volatile boolean closed;

    // The child is registered before its subclass constructor finishes; the parent only stores
    // it and touches it again on close, by which time construction is long over.
    @SuppressWarnings("this-escape")
    protected NativeResource(String description, NativeResource... parents) {
        this.description = description;
        this.parents = java.util.Arrays.stream(parents).filter(java.util.Objects::nonNull).distinct()
                .toArray(NativeResource[]::new);
        for (NativeResource parent : this.parents) {
            parent.adopt(this);
        }
    }

    /** Human-readable name used in every error message about this object, e.g. "QueuePair 17 on rxe0". */
    public final String description() {
        return description;
    }

    public final boolean isClosed() {
        return closed;
    }

    /** Throws {@link ResourceClosedException} naming this object when it was closed. */
    public final void ensureOpen() {
        if (closed) {
            throw new ResourceClosedException(description);
        }
    }

    private synchronized void adopt(NativeResource child) {
        ensureOpen();
        children.add(child);
    }

    private synchronized void forget(NativeResource child) {
        children.remove(child);
    }

    @Override
    public final void close() {
        List<NativeResource> open;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            open = new ArrayList<>(children);
            children.clear();
        }
        RuntimeException failure = null;
        for (int i = open.size() - 1; i >= 0; i--) {
            try {
                open.get(i).close();
            } catch (RuntimeException e) {
                failure = addTo(failure, e);
            }
        }
        try {
            release();
        } catch (RuntimeException e) {
            failure = addTo(failure, e);
        }
        for (NativeResource parent : parents) {
            parent.forget(this);
        }
        if (failure != null) {
            throw failure;
        }
    }

    private static RuntimeException addTo(RuntimeException first, RuntimeException next) {
        if (first == null) {
            return next;
        }
        first.addSuppressed(next);
        return first;
    }

    /** Frees the native handle; called once, after all children are closed. */
    protected abstract void release();

    @Override
    public String toString() {
        return description + (closed ? " (closed)" : "");
    }
}
