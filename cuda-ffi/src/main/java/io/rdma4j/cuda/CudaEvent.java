package io.rdma4j.cuda;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.cuda.ffi.CudaDriver;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

/**
 * A CUDA event: a marker recorded into a stream, completed when the work before it is; with
 * timing, two events measure GPU time between them (how the CUDA samples time copies).
 */
public final class CudaEvent extends NativeResource {
    private final CudaContext context;
    private final MemorySegment handle;
    private final boolean timing;

    private CudaEvent(CudaContext context, MemorySegment handle, boolean timing) {
        super("CudaEvent 0x" + Long.toHexString(handle.address()) + " on " + context.device(), context);
        this.context = context;
        this.handle = handle;
        this.timing = timing;
    }

    static CudaEvent create(CudaContext context, boolean timing) {
        context.makeCurrent();
        MemorySegment handle;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(CudaDriver.C_POINTER);
            int flags = timing ? CudaDriver.CU_EVENT_DEFAULT() : CudaDriver.CU_EVENT_DISABLE_TIMING();
            CudaResult.check(CudaDriver.cuEventCreate(out, flags), "cuEventCreate", context);
            handle = out.get(CudaDriver.C_POINTER, 0);
        }
        try {
            return new CudaEvent(context, handle, timing);
        } catch (RuntimeException e) {
            CudaDriver.cuEventDestroy_v2(handle);
            throw e;
        }
    }

    /** The CUevent handle. */
    public MemorySegment handle() {
        ensureOpen();
        return handle;
    }

    public boolean timing() {
        return timing;
    }

    /** Records this event at the current end of {@code stream} (cuEventRecord). */
    public void record(CudaStream stream) {
        ensureOpen();
        MemorySegment s = stream.handleIn(context);
        context.bind();
        CudaResult.check(CudaDriver.cuEventRecord(handle, s), "cuEventRecord", this);
    }

    /** Whether the recorded work has completed (cuEventQuery); never waits. */
    public boolean isComplete() {
        ensureOpen();
        context.bind();
        return Polling.done(CudaDriver.cuEventQuery(handle), "cuEventQuery", this);
    }

    public void synchronize(Duration timeout) {
        synchronize(timeout.toNanos());
    }

    /**
     * Waits until the recorded work has completed.
     *
     * @throws CudaTimeoutException naming this event when {@code timeoutNanos} passed first
     */
    public void synchronize(long timeoutNanos) {
        ensureOpen();
        context.bind();
        Polling.await(CudaDriver::cuEventQuery, handle, "cuEventQuery", this, timeoutNanos);
    }

    /**
     * GPU milliseconds from {@code start} to this event (cuEventElapsedTime); both must have
     * been recorded with timing and completed.
     */
    public float elapsedMillisSince(CudaEvent start) {
        ensureOpen();
        MemorySegment from = start.handle();
        if (!timing || !start.timing) {
            throw new IllegalStateException("elapsed time needs two timing events; "
                    + (timing ? start : this) + " was created without timing");
        }
        context.bind();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ms = arena.allocate(CudaDriver.C_FLOAT);
            CudaResult.check(CudaDriver.cuEventElapsedTime(ms, from, handle), "cuEventElapsedTime",
                    start + " -> " + this);
            return ms.get(CudaDriver.C_FLOAT, 0);
        }
    }

    @Override
    protected void release() {
        context.bind();
        CudaResult.check(CudaDriver.cuEventDestroy_v2(handle), "cuEventDestroy_v2", this);
    }
}
