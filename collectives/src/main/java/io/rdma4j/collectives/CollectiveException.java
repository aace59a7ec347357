package io.rdma4j.collectives;

/**
 * A collective failed. {@link #failedRank()} names the (world) rank that caused it when it is
 * known: a rank that died or stopped answering, the rank whose call did not match, or the rank
 * that aborted; -1 when no single rank is to blame. After a failure the communicator is broken:
 * every later call fails with the same cause until it is closed or aborted.
 */
public class CollectiveException extends RuntimeException {
    private final int failedRank;

    public CollectiveException(int failedRank, String message) {
        this(failedRank, message, null);
    }

    public CollectiveException(int failedRank, String message, Throwable cause) {
        super(message, cause);
        this.failedRank = failedRank;
    }

    /** The world rank to blame, or -1. */
    public int failedRank() {
        return failedRank;
    }
}
