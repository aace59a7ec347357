package io.rdma4j.nativesupport;

import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Base of every object that owns a native handle (verbs objects, CUDA driver resources). Each
 * object names the objects it depends on (a QP: its PD and CQs; an MR: its PD; a device
 * buffer: its CUDA context), and a child keeps its parents alive, as in rust-ibverbs: {@link #close()} on a parent that still
 * has open children only marks it closed (no new children, {@link #ensureOpen()} fails) and
 * frees its handle when the last child closes. So closing a protection domain never destroys
 * a queue pair that other code still uses, and verbs never sees a destroy in the wrong order
 * (EBUSY: a CQ that a live QP still uses). The flip side: a child that is never closed keeps
 * its parents' handles too; {@link #pendingChildren()} names what a closed parent waits for.
 */
public abstract class NativeResource implements AutoCloseable {
    private static final AtomicInteger UNRELEASED = new AtomicInteger();

    private final String description;
    private final NativeResource[] parents;
    private final Set<NativeResource> children = new LinkedHashSet<>();
    private volatile boolean closed;
    private boolean released;

    // The child is registered before its subclass constructor finishes; the parent only stores
    // it and touches it again on close, by which time construction is long over.
    @SuppressWarnings("this-escape")
    protected NativeResource(String description, NativeResource... parents) {
        this.description = description;
        // a lone null parent arrives as a null array: an object without parents
        this.parents = parents == null ? new NativeResource[0]
                : Arrays.stream(parents).filter(Objects::nonNull).distinct().toArray(NativeResource[]::new);
        int adopted = 0;
        try {
            for (NativeResource parent : this.parents) {
                parent.adopt(this);
                adopted++;
            }
        } catch (RuntimeException e) {
            for (int i = 0; i < adopted; i++) {
                this.parents[i].forget(this);
            }
            throw e;
        }
        UNRELEASED.incrementAndGet();
    }

    /** Human-readable name used in every error message about this object, e.g. "QueuePair 17 on rxe0". */
    public final String description() {
        return description;
    }

    /** Whether {@link #close()} was called (its handle may still live on for open children). */
    public final boolean isClosed() {
        return closed;
    }

    /** Whether the native handle is freed: closed, and no child is open any more. */
    public final synchronized boolean isReleased() {
        return released;
    }

    /** The open children a closed parent still waits for before it frees its handle. */
    public final synchronized List<String> pendingChildren() {
        return children.stream().map(NativeResource::description).toList();
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

    /** A child is gone: a closed parent whose last child this was frees its handle now. */
    private void forget(NativeResource child) {
        boolean releaseNow;
        synchronized (this) {
            children.remove(child);
            releaseNow = closed && !released && children.isEmpty();
            released |= releaseNow;
        }
        if (releaseNow) {
            releaseAndLeaveParents();
        }
    }

    /**
     * Closes this object: its handle is freed now if no child is open, else when the last one
     * closes. Idempotent once it got past {@link #revokeAccess()}, whose refusal leaves the object
     * open (close it again later). A failure to free the handle is thrown from the call that frees
     * it (this one, or a child's close) and is not tried again: the handle counts as released
     * (what the library could not destroy, a later destroy would not either).
     */
    @Override
    public final void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            revokeAccess();
            closed = true;
        }
        boolean releaseNow;
        synchronized (this) {
            releaseNow = !released && children.isEmpty();
            released |= releaseNow;
        }
        if (releaseNow) {
            releaseAndLeaveParents();
        }
    }

    /** The first failure, with later ones suppressed in it. */
    private static RuntimeException addTo(RuntimeException first, RuntimeException next) {
        if (first == null) {
            return next;
        }
        first.addSuppressed(next);
        return first;
    }

    /**
     * Makes this object's memory inaccessible to Java code, before {@link #close()} marks it
     * closed: e.g. closes the shared arena of a segment it hands out. A failure leaves the object
     * open and is thrown from that close, which can then be called again: a shared arena that
     * another thread holds acquired (a native call running with the segment) refuses to close,
     * and freeing the memory under that call is what the arena is there to prevent. An object that
     * made children for itself, which no user closes (the device context an rdma_cm id lends
     * out), closes them here, so that their refusal leaves it open as well.
     */
    protected void revokeAccess() {
    }

    private void releaseAndLeaveParents() {
        RuntimeException failure = null;
        try {
            release();
        } catch (RuntimeException e) {
            failure = e;
        } finally {
            UNRELEASED.decrementAndGet();
        }
        for (NativeResource parent : parents) {
            try {
                parent.forget(this);
            } catch (RuntimeException e) {
                failure = addTo(failure, e);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /**
     * Objects of this process whose native handle is not freed yet: for leak checks (a count
     * that does not return to where it was after everything is closed names a leak). A handle
     * whose destroy failed counts as freed here; its close threw that failure.
     */
    public static int unreleasedCount() {
        return UNRELEASED.get();
    }

    /** Frees the native handle; called once, after this object was closed and every child released. */
    protected abstract void release();

    @Override
    public String toString() {
        return description + (closed ? " (closed)" : "");
    }
}
