package io.rdma4j.cuda;

/**
 * A CUDA driver call failed. Carries the {@code CUresult} code and what the driver itself says
 * about it (cuGetErrorName / cuGetErrorString), so the message reads like the CUDA tools':
 * {@code cuMemAlloc_v2 (67108864 bytes on device 0) failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory}.
 *
 * <p>Subclasses that are not driver results ({@link CudaTimeoutException}) report
 * {@link #NO_RESULT}.
 */
public class CudaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** {@link #result()} of exceptions that do not come from a driver return code. */
    public static final int NO_RESULT = -1;

    private final int result;
    private final String errorName;
    private final String errorString;
    private final String function;

    CudaException(String function, String subject, int result, String errorName, String errorString) {
        super(function + (subject == null ? "" : " (" + subject + ")") + " failed: " + errorName + " (" + result
                + "): " + errorString);
        this.result = result;
        this.errorName = errorName;
        this.errorString = errorString;
        this.function = function;
    }

    protected CudaException(String message, String function) {
        super(message);
        this.result = NO_RESULT;
        this.errorName = "";
        this.errorString = "";
        this.function = function;
    }

    /** The {@code CUresult} value, e.g. 100 for CUDA_ERROR_NO_DEVICE, or {@link #NO_RESULT}. */
    public int result() {
        return result;
    }

    /** The driver's name of the result, e.g. {@code CUDA_ERROR_NO_DEVICE}. */
    public String errorName() {
        return errorName;
    }

    /** The driver's description of the result, e.g. {@code no CUDA-capable device is detected}. */
    public String errorString() {
        return errorString;
    }

    /** The driver function that failed, e.g. {@code cuInit}. */
    public String function() {
        return function;
    }
}
