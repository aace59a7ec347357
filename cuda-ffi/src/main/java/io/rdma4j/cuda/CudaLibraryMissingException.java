package io.rdma4j.cuda;

/**
 * The CUDA driver library (libcuda.so.1, installed with the NVIDIA driver) could not be found or
 * loaded. The message lists where it was looked for and what to install.
 */
public final class CudaLibraryMissingException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CudaLibraryMissingException(String message) {
        super(message);
    }

    CudaLibraryMissingException(String message, Throwable cause) {
        super(message, cause);
    }
}
