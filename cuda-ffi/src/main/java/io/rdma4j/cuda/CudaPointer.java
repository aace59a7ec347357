package io.rdma4j.cuda;

import io.rdma4j.cuda.ffi.CudaDriver;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * Pointer attributes (cuPointerGetAttribute): lets code that receives a bare address tell device
 * memory from host memory, as NCCL does before choosing a path. Needs {@link Cuda#init()}.
 */
public final class CudaPointer {
    private static final int INVALID_VALUE = CudaDriver.CUDA_ERROR_INVALID_VALUE();

    private CudaPointer() {
    }

    /**
     * The memory type of {@code address}; empty when the driver does not know the address (plain
     * pageable host memory, or a freed allocation).
     */
    public static Optional<CudaMemoryType> memoryType(long address) {
        Cuda.init();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(CudaDriver.C_LONG_LONG);
            int r = CudaDriver.cuPointerGetAttribute(data, CudaDriver.CU_POINTER_ATTRIBUTE_MEMORY_TYPE(), address);
            if (r == INVALID_VALUE) {
                return Optional.empty();
            }
            CudaResult.check(r, "cuPointerGetAttribute(MEMORY_TYPE)", hex(address));
            return Optional.of(CudaMemoryType.of(data.get(CudaDriver.C_INT, 0)));
        }
    }

    /** The ordinal of the device whose memory {@code address} is (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL). */
    public static int deviceOrdinal(long address) {
        Cuda.init();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(CudaDriver.C_LONG_LONG);
            CudaResult.check(CudaDriver.cuPointerGetAttribute(data, CudaDriver.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL(),
                    address), "cuPointerGetAttribute(DEVICE_ORDINAL)", hex(address));
            return data.get(CudaDriver.C_INT, 0);
        }
    }

    private static String hex(long address) {
        return "address 0x" + Long.toHexString(address);
    }
}
