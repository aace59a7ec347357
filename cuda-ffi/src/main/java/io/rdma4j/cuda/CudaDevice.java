package io.rdma4j.cuda;

import io.rdma4j.cuda.ffi.CudaDriver;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One CUDA device (a CUdevice handle; no resource to free). Obtain with {@link Cuda#device(int)};
 * work on it goes through its primary context ({@link #retainPrimaryContext()}), the context the
 * CUDA runtime, PyTorch and NCCL share.
 */
public final class CudaDevice {
    // Longer than any name or bus id the driver writes (names are <= 256 in cudaDeviceProp).
    private static final int TEXT_CAPACITY = 256;

    private final int ordinal;
    private final int handle;

    CudaDevice(int ordinal, int handle) {
        this.ordinal = ordinal;
        this.handle = handle;
    }

    public int ordinal() {
        return ordinal;
    }

    /** The CUdevice value passed to the driver. */
    public int handle() {
        return handle;
    }

    /** Marketing name, e.g. "NVIDIA H200". */
    public String name() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment text = arena.allocate(TEXT_CAPACITY);
            CudaResult.check(CudaDriver.cuDeviceGetName(text, TEXT_CAPACITY, handle), "cuDeviceGetName", this);
            return text.getString(0);
        }
    }

    /** PCI address as domain:bus:device.function, e.g. "0000:17:00.0", to match with an RDMA NIC's. */
    public String pciBusId() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment text = arena.allocate(TEXT_CAPACITY);
            CudaResult.check(CudaDriver.cuDeviceGetPCIBusId(text, TEXT_CAPACITY, handle), "cuDeviceGetPCIBusId", this);
            return text.getString(0);
        }
    }

    /** cuDeviceGetAttribute for a {@code CU_DEVICE_ATTRIBUTE_*} value of the generated {@code CudaDriver}. */
    public int attribute(int attribute) {
        return attribute(attribute, false);
    }

    /**
     * @param unknownIsZero answer 0 where the driver answers CUDA_ERROR_INVALID_VALUE: a driver
     *                      older than a feature's attribute does not know it, and lacks the feature
     */
    private int attribute(int attribute, boolean unknownIsZero) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(CudaDriver.C_INT);
            int result = CudaDriver.cuDeviceGetAttribute(value, attribute, handle);
            if (unknownIsZero && result == CudaDriver.CUDA_ERROR_INVALID_VALUE()) {
                return 0;
            }
            CudaResult.check(result, "cuDeviceGetAttribute", "attribute " + attribute + " of " + this);
            return value.get(CudaDriver.C_INT, 0);
        }
    }

    public ComputeCapability computeCapability() {
        return new ComputeCapability(attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR()),
                attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR()));
    }

    public int multiprocessorCount() {
        return attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT());
    }

    /** Whether device and host share one virtual address space (needed to tell pointers apart). */
    public boolean unifiedAddressing() {
        return attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING()) != 0;
    }

    /**
     * Whether device memory can be exported as a dma-buf (cuMemGetHandleForAddressRange); false on
     * a driver that lacks the function (before CUDA 11.7, R515).
     */
    public boolean dmaBufSupported() {
        return CudaLibrary.exports(CudaLibrary.DMA_BUF_EXPORT)
                && attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED(), true) != 0;
    }

    /** Whether the device supports GPUDirect RDMA at all (peer access by a NIC); false on a driver older than the attribute. */
    public boolean gpuDirectRdmaSupported() {
        return attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED(), true) != 0;
    }

    /** Total device memory in bytes. */
    public long totalMemory() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment bytes = arena.allocate(CudaDriver.C_LONG);
            CudaResult.check(CudaDriver.cuDeviceTotalMem_v2(bytes, handle), "cuDeviceTotalMem_v2", this);
            return bytes.get(CudaDriver.C_LONG, 0);
        }
    }

    /** Retains the device's primary context (cuDevicePrimaryCtxRetain); close the context to release it. */
    public CudaContext retainPrimaryContext() {
        return CudaContext.retainPrimary(this);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CudaDevice d && d.handle == handle;
    }

    @Override
    public int hashCode() {
        return handle;
    }

    @Override
    public String toString() {
        return "CUDA device " + ordinal;
    }
}
