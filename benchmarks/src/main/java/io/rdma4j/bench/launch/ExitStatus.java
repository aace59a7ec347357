package io.rdma4j.bench.launch;

/** Exit statuses of the benchmark tools, and how the launcher describes a rank's status. */
public final class ExitStatus {
    public static final int OK = 0;
    public static final int WRONG_RESULTS = 1;
    public static final int USAGE = 2;
    public static final int FAILED = 3;

    private ExitStatus() {
    }

    /** Words for a child's exit status (the JVM reports a signal death as 128 + signal). */
    public static String describe(int status) {
        return switch (status) {
            case OK -> "success";
            case WRONG_RESULTS -> "wrong results";
            case USAGE -> "bad usage";
            case FAILED -> "failed";
            default -> status > 128 && status < 128 + 65 ? "killed by signal " + (status - 128) + signalName(status - 128)
                    : "exit status " + status;
        };
    }

    private static String signalName(int signal) {
        return switch (signal) {
            case 9 -> " (SIGKILL)";
            case 15 -> " (SIGTERM)";
            case 6 -> " (SIGABRT)";
            case 11 -> " (SIGSEGV)";
            case 2 -> " (SIGINT)";
            default -> "";
        };
    }
}
