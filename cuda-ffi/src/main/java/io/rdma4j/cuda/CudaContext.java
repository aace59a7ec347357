package io.rdma4j.cuda;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.cuda.ffi.CudaDriver;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A retain of a device's primary context. Everything allocated through it (buffers, pinned
 * memory, streams, events) is closed before the retain is released.
 *
 * <p>The driver keeps a "current context" per thread, and most calls act on it. Java code moves
 * between threads (executors, virtual threads), so every operation of this package makes its
 * context current on the calling thread first (cuCtxSetCurrent only sets a thread-local in the
 * driver); callers never need {@link #makeCurrent()} for rdma4j's own calls.
 */
public final class CudaContext extends NativeResource {
    private final CudaDevice device;
    private final MemorySegment handle;

    private CudaContext(CudaDevice device, MemorySegment handle) {
        super("primary context of " + device);
        this.device = device;
        this.handle = handle;
    }

    static CudaContext retainPrimary(CudaDevice device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(CudaDriver.C_POINTER);
            CudaResult.check(CudaDriver.cuDevicePrimaryCtxRetain(out, device.handle()), "cuDevicePrimaryCtxRetain",
                    device);
            return new CudaContext(device, out.get(CudaDriver.C_POINTER, 0));
        }
    }

    public CudaDevice device() {
        return device;
    }

    /** The CUcontext handle. */
    public MemorySegment handle() {
        return handle;
    }

    /**
     * Whether {@code other} is the same driver context: every retain of a device's primary
     * context is an object of its own over the one CUcontext.
     */
    public boolean sameContextAs(CudaContext other) {
        return other == this || (other != null && other.handle.address() == handle.address());
    }

    /** Makes this context current on the calling thread (for code that calls the driver directly). */
    public void makeCurrent() {
        ensureOpen();
        bind();
    }

    /** cuCtxSetCurrent without the open check; callers have checked their own object. */
    void bind() {
        CudaResult.check(CudaDriver.cuCtxSetCurrent(handle), "cuCtxSetCurrent", this);
    }

    /**
     * Waits for all work in this context (cuCtxSynchronize). The driver offers no timed form of
     * this call; code that must not hang waits on a {@link CudaStream} or {@link CudaEvent} with a timeout.
     */
    public void synchronize() {
        makeCurrent();
        CudaResult.check(CudaDriver.cuCtxSynchronize(), "cuCtxSynchronize", this);
    }

    /** Device memory free right now, in bytes (cuMemGetInfo_v2). */
    public long freeMemory() {
        makeCurrent();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment free = arena.allocate(CudaDriver.C_LONG);
            MemorySegment total = arena.allocate(CudaDriver.C_LONG);
            CudaResult.check(CudaDriver.cuMemGetInfo_v2(free, total), "cuMemGetInfo_v2", this);
            return free.get(CudaDriver.C_LONG, 0);
        }
    }

    /** Allocates {@code bytes} of device memory (cuMemAlloc_v2); contents are undefined. */
    public DeviceBuffer allocate(long bytes) {
        return DeviceBuffer.allocate(this, bytes);
    }

    /**
     * Allocates page-locked host memory (cuMemHostAlloc, portable to every context): the fast
     * path of host/device copies, and registrable with an RDMA NIC like any host memory.
     */
    public PinnedHostBuffer allocatePinned(long bytes) {
        return PinnedHostBuffer.allocate(this, bytes);
    }

    /** Page-locks existing host memory (cuMemHostRegister_v2) until the registration is closed. */
    public HostRegistration registerHost(MemorySegment memory) {
        return HostRegistration.register(this, memory);
    }

    /** A stream that does not synchronize with the legacy default stream (CU_STREAM_NON_BLOCKING). */
    public CudaStream createStream() {
        return CudaStream.create(this);
    }

    /** An event that records timing (for {@link CudaEvent#elapsedMillisSince}). */
    public CudaEvent createEvent() {
        return CudaEvent.create(this, true);
    }

    /** An event; without timing it is cheaper to record and to wait for. */
    public CudaEvent createEvent(boolean timing) {
        return CudaEvent.create(this, timing);
    }

    @Override
    protected void release() {
        CudaResult.check(CudaDriver.cuDevicePrimaryCtxRelease_v2(device.handle()), "cuDevicePrimaryCtxRelease_v2",
                device);
    }
}
