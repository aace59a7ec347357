package io.rdma4j.cuda;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.nativesupport.internal.Checks;
import io.rdma4j.nativesupport.internal.LibC;
import io.rdma4j.cuda.ffi.CudaDriver;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A range of device memory: a CUdeviceptr and a size. The buffer returned by
 * {@link CudaContext#allocate(long)} owns its allocation (cuMemFree_v2 on close); a
 * {@link #slice(long, long)} is a view that shares it and whose close does nothing.
 *
 * <p>Every operation is bounds-checked against this buffer (device side) and the host segment
 * (host side) before the driver sees an address, and fails with an IllegalStateException once
 * the allocation was freed. Host segments must be native memory; they must stay alive until an
 * asynchronous copy has completed (synchronize the stream), and only page-locked memory
 * ({@link PinnedHostBuffer}) makes a copy truly asynchronous.
 */
public final class DeviceBuffer implements AutoCloseable {
    /** What to do about a heap segment handed to a copy (the driver reads host memory by address). */
    static final String CUDA_COPY = "CUDA copies need native memory (a PinnedHostBuffer's segment, or Arena.allocate)";

    private final Allocation allocation;
    private final long address;
    private final long size;
    private final boolean owner;

    private DeviceBuffer(Allocation allocation, long address, long size, boolean owner) {
        this.allocation = allocation;
        this.address = address;
        this.size = size;
        this.owner = owner;
    }

    static DeviceBuffer allocate(CudaContext context, long bytes) {
        Checks.positive("bytes", bytes);
        context.makeCurrent();
        long address;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(CudaDriver.C_LONG_LONG);
            CudaResult.check(CudaDriver.cuMemAlloc_v2(out, bytes), "cuMemAlloc_v2",
                    bytes + " bytes on " + context.device());
            address = out.get(CudaDriver.C_LONG_LONG, 0);
        }
        try {
            Allocation allocation = new Allocation(context, address, bytes);
            return new DeviceBuffer(allocation, address, bytes, true);
        } catch (RuntimeException e) {
            // the context was closed meanwhile: do not leak what was just allocated
            CudaDriver.cuMemFree_v2(address);
            throw e;
        }
    }

    /** The device address (CUdeviceptr) of the first byte. */
    public long address() {
        return address;
    }

    public long byteSize() {
        return size;
    }

    public CudaContext context() {
        return allocation.context;
    }

    /** Whether this is a view made by {@link #slice(long, long)}. */
    public boolean isSlice() {
        return !owner;
    }

    public boolean isClosed() {
        return allocation.isClosed();
    }

    /** A view of {@code length} bytes at {@code offset}; valid while the allocation is. */
    public DeviceBuffer slice(long offset, long length) {
        allocation.ensureOpen();
        Checks.range(offset, length, size, this);
        return new DeviceBuffer(allocation, address + offset, length, false);
    }

    /** Copies all of {@code source} (native host memory) to the start of this buffer. */
    public void copyFromHost(MemorySegment source) {
        copyFromHost(source, 0, 0, source.byteSize());
    }

    /** Copies {@code length} bytes of host {@code source} at {@code sourceOffset} to {@code offset} of this buffer. */
    public void copyFromHost(MemorySegment source, long sourceOffset, long offset, long length) {
        MemorySegment host = hostRange(source, sourceOffset, offset, length, false);
        try {
            CudaResult.check(CudaDriver.cuMemcpyHtoD_v2(address + offset, host, length), "cuMemcpyHtoD_v2", this);
        } finally {
            end();
        }
    }

    /** As {@link #copyFromHost(MemorySegment, long, long, long)}, queued on {@code stream}. */
    public void copyFromHostAsync(MemorySegment source, long sourceOffset, long offset, long length, CudaStream stream) {
        MemorySegment host = hostRange(source, sourceOffset, offset, length, false);
        try {
            CudaResult.check(CudaDriver.cuMemcpyHtoDAsync_v2(address + offset, host, length,
                    stream.handleIn(context())), "cuMemcpyHtoDAsync_v2", this);
        } finally {
            end();
        }
    }

    /** Copies the start of this buffer into all of {@code target} (native host memory). */
    public void copyToHost(MemorySegment target) {
        copyToHost(0, target, 0, target.byteSize());
    }

    /** Copies {@code length} bytes at {@code offset} of this buffer to host {@code target} at {@code targetOffset}. */
    public void copyToHost(long offset, MemorySegment target, long targetOffset, long length) {
        MemorySegment host = hostRange(target, targetOffset, offset, length, true);
        try {
            CudaResult.check(CudaDriver.cuMemcpyDtoH_v2(host, address + offset, length), "cuMemcpyDtoH_v2", this);
        } finally {
            end();
        }
    }

    /** As {@link #copyToHost(long, MemorySegment, long, long)}, queued on {@code stream}. */
    public void copyToHostAsync(long offset, MemorySegment target, long targetOffset, long length, CudaStream stream) {
        MemorySegment host = hostRange(target, targetOffset, offset, length, true);
        try {
            CudaResult.check(CudaDriver.cuMemcpyDtoHAsync_v2(host, address + offset, length,
                    stream.handleIn(context())), "cuMemcpyDtoHAsync_v2", this);
        } finally {
            end();
        }
    }

    /** Copies all of device buffer {@code source} to the start of this one (cuMemcpyDtoD_v2). */
    public void copyFrom(DeviceBuffer source) {
        checkDeviceSource(source);
        try {
            CudaResult.check(CudaDriver.cuMemcpyDtoD_v2(address, source.address, source.size), "cuMemcpyDtoD_v2",
                    this);
        } finally {
            endWith(source);
        }
    }

    /** As {@link #copyFrom(DeviceBuffer)}, queued on {@code stream}. */
    public void copyFromAsync(DeviceBuffer source, CudaStream stream) {
        checkDeviceSource(source);
        try {
            CudaResult.check(CudaDriver.cuMemcpyDtoDAsync_v2(address, source.address, source.size,
                    stream.handleIn(context())), "cuMemcpyDtoDAsync_v2", this);
        } finally {
            endWith(source);
        }
    }

    /** Sets every byte to {@code value} (cuMemsetD8_v2). */
    public void fill(byte value) {
        begin();
        try {
            CudaResult.check(CudaDriver.cuMemsetD8_v2(address, value, size), "cuMemsetD8_v2", this);
        } finally {
            end();
        }
    }

    /** As {@link #fill(byte)}, queued on {@code stream}. */
    public void fillAsync(byte value, CudaStream stream) {
        begin();
        try {
            CudaResult.check(CudaDriver.cuMemsetD8Async(address, value, size, stream.handleIn(context())),
                    "cuMemsetD8Async", this);
        } finally {
            end();
        }
    }

    /** What the driver says this address is (cuPointerGetAttribute); DEVICE for memory from cuMemAlloc. */
    public CudaMemoryType memoryType() {
        begin();
        try {
            return CudaPointer.memoryType(address).orElseThrow(() -> new IllegalStateException(
                    "the driver does not recognize " + this + " as CUDA memory"));
        } finally {
            end();
        }
    }

    /** The ordinal of the device that holds this memory (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL). */
    public int deviceOrdinal() {
        begin();
        try {
            return CudaPointer.deviceOrdinal(address);
        } finally {
            end();
        }
    }

    /**
     * Exports the memory as a dma-buf (cuMemGetHandleForAddressRange with
     * CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD), for ibv_reg_dmabuf_mr. The driver exports whole host
     * pages, so the exported range is this buffer's allocation rounded out to pages, and
     * {@link DmaBuf#offset()} says where this buffer starts inside it. The fd is the caller's to close.
     *
     * @throws CudaException e.g. CUDA_ERROR_NOT_SUPPORTED where the driver or kernel lacks dma-buf
     *                       (also where the driver predates cuMemGetHandleForAddressRange)
     */
    public DmaBuf exportDmaBuf() {
        begin();
        try {
            return exportDmaBufInUse();
        } finally {
            end();
        }
    }

    private DmaBuf exportDmaBufInUse() {
        if (!CudaLibrary.exports(CudaLibrary.DMA_BUF_EXPORT)) {
            throw CudaResult.exception(CudaDriver.CUDA_ERROR_NOT_SUPPORTED(), CudaLibrary.DMA_BUF_EXPORT,
                    this + ": the driver " + Cuda.loadedLibrary().orElse(null) + " (version "
                            + Cuda.versionString(Cuda.driverVersion()) + ") lacks it; dma-buf export needs CUDA 11.7 (R515) or later");
        }
        long page = LibC.pageSize();
        long start = allocation.address & -page;
        long end = (allocation.address + allocation.size + page - 1) & -page;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment fd = arena.allocate(CudaDriver.C_INT);
            fd.set(CudaDriver.C_INT, 0, -1);
            CudaResult.check(CudaDriver.cuMemGetHandleForAddressRange(fd, start, end - start,
                    CudaDriver.CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD(), 0L), "cuMemGetHandleForAddressRange", this);
            return new DmaBuf(fd.get(CudaDriver.C_INT, 0), address - start, size, end - start, address);
        }
    }

    /** Frees the allocation (cuMemFree_v2) if this buffer owns it; idempotent; a slice's close does nothing. */
    @Override
    public void close() {
        if (!isSlice()) {
            allocation.close();
        }
    }

    /**
     * Before a driver call on the memory: holds the allocation in use (its free waits for the
     * call) and makes its context current; {@link #end()} after the call.
     */
    private void begin() {
        allocation.enter();
        try {
            allocation.context.bind();
        } catch (RuntimeException e) {
            allocation.exit();
            throw e;
        }
    }

    private void end() {
        allocation.exit();
    }

    /** {@link #end()} of a device-to-device copy, which held its source in use too. */
    private void endWith(DeviceBuffer source) {
        try {
            source.allocation.exit();
        } finally {
            end();
        }
    }

    private MemorySegment hostRange(MemorySegment host, long hostOffset, long offset, long length, boolean toHost) {
        if (toHost) {
            Checks.writableNativeMemory(host, "target", CUDA_COPY);
        } else {
            Checks.nativeMemory(host, "source", CUDA_COPY);
        }
        Checks.range(hostOffset, length, host.byteSize(), toHost ? "the target segment" : "the source segment");
        Checks.range(offset, length, size, this);
        MemorySegment range = host.asSlice(hostOffset, length);
        begin();
        return range;
    }

    /** Checks a device-to-device copy and holds both allocations in use ({@link #endWith} after it). */
    private void checkDeviceSource(DeviceBuffer source) {
        source.allocation.ensureOpen();
        if (source.size > size) {
            throw new IndexOutOfBoundsException("cannot copy " + source + " into the smaller " + this);
        }
        source.allocation.enter();
        try {
            begin();
        } catch (RuntimeException e) {
            source.allocation.exit();
            throw e;
        }
    }

    @Override
    public String toString() {
        return (isSlice() ? "slice of " : "") + "DeviceBuffer 0x" + Long.toHexString(address) + " (" + size
                + " bytes) on " + allocation.context.device() + (isClosed() ? " (freed)" : "");
    }

    /** The allocation behind a buffer and its slices. */
    private static final class Allocation extends NativeResource {
        final CudaContext context;
        final long address;
        final long size;

        Allocation(CudaContext context, long address, long size) {
            super("DeviceBuffer 0x" + Long.toHexString(address) + " (" + size + " bytes) on " + context.device(),
                    context);
            this.context = context;
            this.address = address;
            this.size = size;
        }

        /** Calls on the memory in progress (read) and its free (write): the free waits for them. */
        private final ReentrantReadWriteLock uses = new ReentrantReadWriteLock();

        /**
         * Holds the memory in use for one driver call; fails once it is closed. A call that
         * entered before the close finishes before the free; one after it never reaches the driver.
         */
        void enter() {
            uses.readLock().lock();
            if (isClosed()) {
                uses.readLock().unlock();
                ensureOpen(); // throws
            }
        }

        void exit() {
            uses.readLock().unlock();
        }

        @Override
        protected void release() {
            uses.writeLock().lock();
            try {
                context.bind();
                CudaResult.check(CudaDriver.cuMemFree_v2(address), "cuMemFree_v2", this);
            } finally {
                uses.writeLock().unlock();
            }
        }
    }
}
