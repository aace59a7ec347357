package io.rdma4j.collectives;

/**
 * Ranks called different collectives (kind, data type, operator, count, root, algorithm or
 * sequence number differ). Raised on the detecting ranks from the descriptor exchanged at the
 * start of every collective, and on the others through the communicator's fault board, before
 * any data of the mismatching call is exchanged.
 */
public class CollectiveMismatchException extends CollectiveException {
    public CollectiveMismatchException(int failedRank, String message) {
        super(failedRank, message);
    }
}
