package io.rdma4j.cuda;

import io.rdma4j.cuda.ffi.CudaDriver;

/** CUmemorytype: where the memory behind an address lives. */
public enum CudaMemoryType {
    HOST(CudaDriver.CU_MEMORYTYPE_HOST()),
    DEVICE(CudaDriver.CU_MEMORYTYPE_DEVICE()),
    ARRAY(CudaDriver.CU_MEMORYTYPE_ARRAY()),
    UNIFIED(CudaDriver.CU_MEMORYTYPE_UNIFIED());

    private final int value;

    CudaMemoryType(int value) {
        this.value = value;
    }

    public int value() {
        return value;
    }

    static CudaMemoryType of(int value) {
        for (CudaMemoryType t : values()) {
            if (t.value == value) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown CUmemorytype " + value);
    }
}
