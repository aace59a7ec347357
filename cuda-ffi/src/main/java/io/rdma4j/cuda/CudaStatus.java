package io.rdma4j.cuda;

/** Why {@link Cuda#probe()} can or cannot use a GPU. */
public enum CudaStatus {
    /** libcuda.so.1 (the NVIDIA driver's user-space library) is not installed or cannot be loaded. */
    LIBRARY_MISSING,
    /** The library found is the CUDA toolkit's stub (CUDA_ERROR_STUB_LIBRARY), not the driver. */
    STUB_LIBRARY,
    /** The driver is installed but reports no GPU (CUDA_ERROR_NO_DEVICE). */
    NO_DEVICE,
    /** cuInit failed for another reason (driver/kernel module mismatch, busy devices, ...). */
    INIT_FAILED,
    /** The driver initialized and lists at least one device. */
    AVAILABLE
}
