package io.rdma4j.launch;

import java.util.List;

/**
 * How a group of {@link LocalRanks} ended.
 *
 * @param kind      what happened
 * @param rank      the (global) rank to blame for {@link Kind#RANK_FAILED}, else -1
 * @param exitCode  that rank's exit code for {@link Kind#RANK_FAILED}, else 0
 * @param detail    a one-line explanation (the stop reason for {@link Kind#STOPPED})
 * @param exitCodes every rank's exit code, by local rank (-1: still running when given up on)
 */
public record RankOutcome(Kind kind, int rank, int exitCode, String detail, List<Integer> exitCodes) {

    public enum Kind {
        /** Every rank exited 0. */
        SUCCEEDED,
        /** A rank exited non-zero on its own; the others were stopped. */
        RANK_FAILED,
        /** The group was stopped from outside (another node's failure, a signal to the launcher). */
        STOPPED,
        /** The ranks did not finish within the wait's timeout and were stopped. */
        TIMED_OUT
    }

    public RankOutcome {
        exitCodes = List.copyOf(exitCodes);
    }

    public boolean succeeded() {
        return kind == Kind.SUCCEEDED;
    }

    /**
     * The exit status a launcher should end with: 0 on success, the failing rank's own code when
     * it is a valid status, else 1.
     */
    public int launcherExitStatus() {
        return switch (kind) {
            case SUCCEEDED -> 0;
            case RANK_FAILED -> exitCode > 0 && exitCode < 256 ? exitCode : 1;
            case STOPPED, TIMED_OUT -> 1;
        };
    }
}
