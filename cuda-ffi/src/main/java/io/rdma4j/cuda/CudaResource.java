package io.rdma4j.cuda;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Base of every object that owns a driver resource (context retain, allocation, stream, event).
 * close() is idempotent and first closes what is still open under it, newest first, so that
 * releasing a primary context never leaves its buffers, streams or events behind.
 *
 * <p>Closing is not synchronized with use: a buffer closed while another thread copies into it
 * is a bug in the caller (as with cuMemFree); what is guaranteed is that every use after close
 * fails with a clear {@link IllegalStateException} instead of handing a freed handle to the driver.
 */
abstract class CudaResource implements AutoCloseable {
    private final String description;
    private final CudaResource parent;
    private final Set<CudaResource> children = new LinkedHashSet<>();
    private volatile boolean closed;

    CudaResource(String description, CudaResource parent) {
        this.description = description;
        this.parent = parent;
        if (parent != null) {
            parent.adopt(this);
        }
    }

    /** Human-readable name used in every message about this object, e.g. "DeviceBuffer 0x7f0000 (1 MiB) on device 0". */
    public final String description() {
        return description;
    }

    public final boolean isClosed() {
        return closed;
    }

    /** Throws IllegalStateException naming this object when it was closed. */
    final void ensureOpen() {
        if (closed) {
            throw new IllegalStateException(description + " is closed");
        }
    }

    private synchronized void adopt(CudaResource child) {
        ensureOpen();
        children.add(child);
    }

    private synchronized void forget(CudaResource child) {
        children.remove(child);
    }

    @Override
    public void close() {
        List<CudaResource> open;
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
        if (parent != null) {
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

    /** Frees the driver resource; called once, after the children are closed. */
    abstract void release();

    @Override
    public String toString() {
        return description + (closed ? " (closed)" : "");
    }
}
