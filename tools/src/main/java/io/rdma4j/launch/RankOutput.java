package io.rdma4j.launch;

import java.io.PrintStream;

/**
 * Where the output lines of {@link LocalRanks} go: called from one forwarding thread per rank and
 * stream, so implementations must be thread-safe. A whole line per call, so that lines of
 * different ranks never interleave mid-line.
 */
@FunctionalInterface
public interface RankOutput {

    /** A line (without its terminator) that rank {@code rank} wrote to stdout or stderr. */
    void line(int rank, boolean stderr, String line);

    /** "[rank N] line" to {@code out} for the ranks' stdout and to {@code err} for their stderr. */
    static RankOutput prefixed(PrintStream out, PrintStream err) {
        // PrintStream.println(String) holds the stream's lock for the whole line.
        return (rank, stderr, line) -> (stderr ? err : out).println("[rank " + rank + "] " + line);
    }

    /** Drops every line (a caller that only wants exit codes). */
    static RankOutput discard() {
        return (rank, stderr, line) -> { };
    }
}
