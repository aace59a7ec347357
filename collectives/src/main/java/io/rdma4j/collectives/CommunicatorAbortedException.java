package io.rdma4j.collectives;

/** The communicator was aborted (locally, or by the rank named in {@link #failedRank()}). */
public class CommunicatorAbortedException extends CollectiveException {
    public CommunicatorAbortedException(int failedRank, String message, Throwable cause) {
        super(failedRank, message, cause);
    }
}
