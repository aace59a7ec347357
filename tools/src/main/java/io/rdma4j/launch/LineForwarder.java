package io.rdma4j.launch;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.Charset;

/**
 * Copies one child stream to a {@link RankOutput} line by line, on a thread of its own; ends at
 * the stream's end (the child and every descendant holding the pipe have exited).
 */
final class LineForwarder {
    private final Thread thread;

    LineForwarder(InputStream in, int rank, boolean stderr, RankOutput sink) {
        this.thread = Thread.ofPlatform().daemon().name("rank-" + rank + (stderr ? "-err" : "-out")).unstarted(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, Charset.defaultCharset()))) {
                for (String line; (line = r.readLine()) != null; ) {
                    sink.line(rank, stderr, line);
                }
            } catch (IOException e) {
                // the pipe broke (process killed): what was read has been forwarded
            }
        });
        thread.start();
    }

    /** Waits up to {@code millis} for the stream's end; false if it is still open. */
    boolean join(long millis) throws InterruptedException {
        return thread.join(java.time.Duration.ofMillis(Math.max(1, millis)));
    }
}
