package io.rdma4j.collectives;

/** A collective made no progress within the communicator's timeout; names whom it waited for. */
public class CollectiveTimeoutException extends CollectiveException {
    public CollectiveTimeoutException(int failedRank, String message) {
        super(failedRank, message);
    }
}
