package io.rdma4j.cuda;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.nativesupport.internal.Checks;
import io.rdma4j.nativesupport.internal.NativeCalls;
import io.rdma4j.cuda.ffi.CudaDriver;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Page-locked host memory from cuMemHostAlloc: the memory of fast and asynchronous host/device
 * copies, and the bounce buffer of the staged GPU path. {@link #segment()} is ordinary native
 * memory of {@link #byteSize()} bytes, so it can also be registered with an RDMA NIC (verbs
 * MemoryRegion, Transport.register). After close the segment is invalid: any access throws
 * IllegalStateException instead of touching freed memory. A close while a native call on another
 * thread still runs with the segment as an argument is refused (IllegalStateException, the buffer
 * stays open and can be closed again), since freeing the memory would pull it from under that call.
 */
public final class PinnedHostBuffer extends NativeResource {
    private final CudaContext context;
    private final MemorySegment segment;
    private final Arena scope;

    private PinnedHostBuffer(CudaContext context, MemorySegment raw, long bytes, Arena scope) {
        super("PinnedHostBuffer 0x" + Long.toHexString(raw.address()) + " (" + bytes + " bytes)", context);
        this.context = context;
        this.scope = scope;
        this.segment = reinterpret(raw, bytes, scope);
    }

    @SuppressWarnings("restricted") // the driver returned exactly this many bytes at this address
    private static MemorySegment reinterpret(MemorySegment raw, long bytes, Arena scope) {
        return raw.reinterpret(bytes, scope, null);
    }

    static PinnedHostBuffer allocate(CudaContext context, long bytes) {
        Checks.positive("bytes", bytes);
        context.makeCurrent();
        MemorySegment raw;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(CudaDriver.C_POINTER);
            CudaResult.check(CudaDriver.cuMemHostAlloc(out, bytes, CudaDriver.CU_MEMHOSTALLOC_PORTABLE()),
                    "cuMemHostAlloc", bytes + " bytes");
            raw = out.get(CudaDriver.C_POINTER, 0);
        }
        Arena scope = Arena.ofShared();
        try {
            return new PinnedHostBuffer(context, raw, bytes, scope);
        } catch (RuntimeException e) {
            scope.close();
            CudaDriver.cuMemFreeHost(raw);
            throw e;
        }
    }

    /** The pinned memory; invalid after close. */
    public MemorySegment segment() {
        ensureOpen();
        return segment;
    }

    public long byteSize() {
        return segment.byteSize();
    }

    public long address() {
        return segment.address();
    }

    public CudaContext context() {
        return context;
    }

    /** What the driver says this memory is: HOST for cuMemHostAlloc memory. */
    public CudaMemoryType memoryType() {
        ensureOpen();
        context.bind();
        return CudaPointer.memoryType(segment.address()).orElseThrow(() -> new IllegalStateException(
                "the driver does not recognize " + description() + " as page-locked memory"));
    }

    /** Invalidates the segment, so that nothing can read it after the driver frees it. */
    @Override
    protected void revokeAccess() {
        NativeCalls.closeLent(scope, description(), "its segment is an argument of a call still running");
    }

    @Override
    protected void release() {
        context.bind();
        CudaResult.check(CudaDriver.cuMemFreeHost(MemorySegment.ofAddress(segment.address())), "cuMemFreeHost", this);
    }
}
