package io.rdma4j.bench.launch;

import io.rdma4j.launch.LocalRanks;

/** Exit statuses of the benchmark tools, and how the launcher describes a rank's status. */
public final class ExitStatus {
    public static final int OK = 0;
    public static final int WRONG_RESULTS = 1;
    public static final int USAGE = 2;
    public static final int FAILED = 3;

    private ExitStatus() {
    }

    /** Words for a rank's exit status (the JVM reports a signal death as 128 + signal). */
    public static String describe(int status) {
        String signal = LocalRanks.signalOf(status);
        return switch (status) {
            case OK -> "success";
            case WRONG_RESULTS -> "wrong results";
            case USAGE -> "bad usage";
            case FAILED -> "failed";
            default -> signal.isEmpty() ? "exit status " + status : signal;
        };
    }
}
