package io.rdma4j.cuda;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.nativesupport.internal.Checks;
import io.rdma4j.cuda.ffi.CudaDriver;

import java.lang.foreign.MemorySegment;

/**
 * Existing host memory page-locked for the driver (cuMemHostRegister_v2, portable), e.g. a
 * buffer that is already registered with an RDMA NIC and should also be a fast copy target.
 * The memory must outlive the registration; close() unregisters it (idempotent).
 */
public final class HostRegistration extends NativeResource {
    private final CudaContext context;
    private final MemorySegment memory;

    private HostRegistration(CudaContext context, MemorySegment memory) {
        super("HostRegistration 0x" + Long.toHexString(memory.address()) + " (" + memory.byteSize() + " bytes)",
                context);
        this.context = context;
        this.memory = memory;
    }

    static HostRegistration register(CudaContext context, MemorySegment memory) {
        Checks.nativeMemory(memory, "memory", DeviceBuffer.CUDA_COPY);
        Checks.positive("memory.byteSize()", memory.byteSize());
        context.makeCurrent();
        CudaResult.check(CudaDriver.cuMemHostRegister_v2(memory, memory.byteSize(),
                CudaDriver.CU_MEMHOSTREGISTER_PORTABLE()), "cuMemHostRegister_v2", memory.byteSize() + " bytes at 0x"
                + Long.toHexString(memory.address()));
        try {
            return new HostRegistration(context, memory);
        } catch (RuntimeException e) {
            CudaDriver.cuMemHostUnregister(memory);
            throw e;
        }
    }

    public MemorySegment memory() {
        ensureOpen();
        return memory;
    }

    @Override
    protected void release() {
        context.bind();
        // by address: the caller's segment may be confined to another thread, or closed already
        CudaResult.check(CudaDriver.cuMemHostUnregister(MemorySegment.ofAddress(memory.address())),
                "cuMemHostUnregister", this);
    }
}
