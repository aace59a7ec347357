package io.rdma4j.cuda;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.cuda.ffi.CudaDriver;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

/**
 * A CUDA stream (non-blocking with respect to the legacy default stream): operations queued on
 * it run in order, concurrently with other streams and with the host.
 */
public final class CudaStream extends NativeResource {
    private final CudaContext context;
    private final MemorySegment handle;

    private CudaStream(CudaContext context, MemorySegment handle) {
        super("CudaStream 0x" + Long.toHexString(handle.address()) + " on " + context.device(), context);
        this.context = context;
        this.handle = handle;
    }

    static CudaStream create(CudaContext context) {
        context.makeCurrent();
        MemorySegment handle;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(CudaDriver.C_POINTER);
            CudaResult.check(CudaDriver.cuStreamCreate(out, CudaDriver.CU_STREAM_NON_BLOCKING()), "cuStreamCreate",
                    context);
            handle = out.get(CudaDriver.C_POINTER, 0);
        }
        try {
            return new CudaStream(context, handle);
        } catch (RuntimeException e) {
            CudaDriver.cuStreamDestroy_v2(handle);
            throw e;
        }
    }

    public CudaContext context() {
        return context;
    }

    /** The CUstream handle. */
    public MemorySegment handle() {
        ensureOpen();
        return handle;
    }

    /** The handle for an operation of {@code owner}'s context; the context is made current. */
    MemorySegment handleIn(CudaContext owner) {
        ensureOpen();
        if (!owner.sameContextAs(context)) {
            throw new IllegalArgumentException(this + " belongs to " + context + ", not to " + owner);
        }
        return handle;
    }

    /** Whether everything queued so far has completed (cuStreamQuery); never waits. */
    public boolean isIdle() {
        ensureOpen();
        context.bind();
        return Polling.done(CudaDriver.cuStreamQuery(handle), "cuStreamQuery", this);
    }

    /** Waits until everything queued so far has completed, at most {@code timeout}. */
    public void synchronize(Duration timeout) {
        synchronize(timeout.toNanos());
    }

    /**
     * Waits until everything queued so far has completed.
     *
     * @throws CudaTimeoutException naming this stream when {@code timeoutNanos} passed first
     */
    public void synchronize(long timeoutNanos) {
        ensureOpen();
        context.bind();
        Polling.await(CudaDriver::cuStreamQuery, handle, "cuStreamQuery", this, timeoutNanos);
    }

    /** Makes later work on this stream wait until {@code event}'s recorded work is done (cuStreamWaitEvent). */
    public void waitFor(CudaEvent event) {
        ensureOpen();
        context.bind();
        CudaResult.check(CudaDriver.cuStreamWaitEvent(handle, event.handle(), 0), "cuStreamWaitEvent", this);
    }

    @Override
    protected void release() {
        context.bind();
        CudaResult.check(CudaDriver.cuStreamDestroy_v2(handle), "cuStreamDestroy_v2", this);
    }
}
