package io.rdma4j.cuda;

/** A bounded wait for GPU work (a stream or an event) ran out of time; the message names what it waited for. */
public final class CudaTimeoutException extends CudaException {
    private static final long serialVersionUID = 1L;

    CudaTimeoutException(String awaited, String query, long timeoutNanos) {
        super("timed out after " + formatNanos(timeoutNanos) + " waiting for " + awaited
                + " to complete (polled with " + query + "); the GPU work queued on it has not finished", query);
    }

    private static String formatNanos(long nanos) {
        return nanos >= 1_000_000_000L && nanos % 1_000_000L == 0 ? nanos / 1_000_000_000.0 + " s"
                : nanos / 1_000_000 + " ms";
    }
}
