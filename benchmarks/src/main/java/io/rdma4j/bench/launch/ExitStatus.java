package io.rdma4j.bench.launch;

import io.rdma4j.launch.LocalRanks;

import java.io.PrintStream;
import java.util.function.IntSupplier;

/** Exit statuses of the benchmark tools, and how the launcher describes a rank's status. */
public final class ExitStatus {
    public static final int OK = 0;
    public static final int WRONG_RESULTS = 1;
    public static final int USAGE = 2;
    public static final int FAILED = 3;

    private ExitStatus() {
    }

    /** Ends the JVM with the status of {@code tool} (see {@link #of}). */
    public static void exit(IntSupplier tool) {
        int status = of(tool, System.err);
        System.out.flush();
        System.exit(status);
    }

    /**
     * What {@code tool} returns, or {@link #FAILED} for an exception or error it let through
     * (printed whole on {@code err}): the JVM's own status for one is 1, which is
     * {@link #WRONG_RESULTS} here.
     */
    public static int of(IntSupplier tool, PrintStream err) {
        try {
            return tool.getAsInt();
        } catch (Throwable t) {
            err.println("failed: " + t);
            t.printStackTrace(err);
            return FAILED;
        }
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
