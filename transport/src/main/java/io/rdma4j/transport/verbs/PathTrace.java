package io.rdma4j.transport.verbs;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A timeline of the verbs data path for measuring where a message's time goes: with
 * {@code -Drdma4j.verbs.trace=PREFIX} every doorbell (before and after post_send), completion,
 * CTS, eager and request event is stamped with {@link System#nanoTime()} into a preallocated ring
 * of the last 2^20 events, written to {@code PREFIX-rankN.tsv} (nanos, event, argument) when the
 * transport closes; {@code benchmarks/scripts/verbs-trace-stats} sums it up (docs/verbs-path.md).
 * Off (the default), {@link #ON} is a constant false and every call site folds away.
 */
final class PathTrace {
    static final String PREFIX = System.getProperty("rdma4j.verbs.trace");
    static final boolean ON = PREFIX != null;
    private static final int CAPACITY = 1 << 20;
    private static final long[] TIMES = ON ? new long[CAPACITY] : null;
    private static final int[] EVENTS = ON ? new int[CAPACITY] : null;
    private static final long[] ARGUMENTS = ON ? new long[CAPACITY] : null;
    private static int count;

    /** Event codes (the numbers the stats script reads). */
    static final int DOORBELL = 1, DOORBELL_DONE = 101, CQE_SEND = 2, CQE_RECV = 3, CTS_IN = 4, CTS_OUT = 5,
            SEND_START = 6, RECV_START = 7, SEND_DONE = 8, RECV_DONE = 9, ISSUE_SEND = 11, RECV_POSTED = 12,
            CREDIT_REPORT = 13;

    private PathTrace() {
    }

    static void event(int event, long argument) {
        if (!ON) {
            return;
        }
        synchronized (PathTrace.class) {
            int i = count++ & (CAPACITY - 1);
            TIMES[i] = System.nanoTime();
            EVENTS[i] = event;
            ARGUMENTS[i] = argument;
        }
    }

    static synchronized void dump(int rank) {
        if (!ON) {
            return;
        }
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(Path.of(PREFIX + "-rank" + rank + ".tsv")))) {
            for (int k = Math.max(0, count - CAPACITY); k < count; k++) {
                int i = k & (CAPACITY - 1);
                w.println(TIMES[i] + "\t" + EVENTS[i] + "\t" + ARGUMENTS[i]);
            }
        } catch (IOException e) {
            System.err.println("rdma4j: could not write the verbs path trace of rank " + rank + ": " + e);
        }
    }
}
