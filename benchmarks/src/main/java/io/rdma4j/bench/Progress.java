package io.rdma4j.bench;

import java.io.PrintStream;

/**
 * A line on stderr now and then during long runs, so a user sees that large sizes are still
 * running: nothing for runs that finish within the first interval.
 */
public final class Progress {
    private static final long INTERVAL_NANOS = 5_000_000_000L;

    private final PrintStream err;
    private final String tool;
    private final int total;
    private final long start = System.nanoTime();
    private long lastPrint = start;

    public Progress(PrintStream err, String tool, int total) {
        this.err = err;
        this.tool = tool;
        this.total = total;
    }

    /** Called when a size starts (index counts from 0). */
    public void starting(int index, long bytes) {
        long now = System.nanoTime();
        if (now - lastPrint >= INTERVAL_NANOS) {
            lastPrint = now;
            err.printf("%s: %d/%d sizes done, now %s B, %d s elapsed%n", tool, index, total, ByteSizes.format(bytes),
                    (now - start) / 1_000_000_000L);
            err.flush();
        }
    }
}
