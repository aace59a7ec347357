package io.rdma4j.collectives;

import java.time.Duration;
import java.util.Map;

/**
 * Tunables of a communicator, settable by builder and by environment variables:
 * <table>
 * <caption>environment variables</caption>
 * <tr><td>RDMA4J_ALGO</td><td>force an allreduce algorithm: ring, tree, rhd, twohop, shm
 *     (an algorithm that cannot run on the group falls back to the policy's choice)</td></tr>
 * <tr><td>RDMA4J_TIMEOUT_MS</td><td>no-progress timeout of every collective (default 300000)</td></tr>
 * <tr><td>RDMA4J_CHUNK_BYTES</td><td>pipeline chunk size (default 262144)</td></tr>
 * <tr><td>RDMA4J_WINDOW</td><td>chunks in flight per pipeline (default 4)</td></tr>
 * <tr><td>RDMA4J_CHANNELS</td><td>independent rings for large allreduces (default 1)</td></tr>
 * </table>
 */
public record CollectiveOptions(Duration timeout, int chunkBytes, int window, int channels, Algorithm algorithm,
                                Duration stallCheck) {

    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(5);

    public CollectiveOptions {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
        if (chunkBytes < 64 || (chunkBytes & 7) != 0) {
            throw new IllegalArgumentException("chunk bytes must be a multiple of 8, >= 64: " + chunkBytes);
        }
        if (window < 1 || window > 64) {
            throw new IllegalArgumentException("window must be 1..64: " + window);
        }
        if (channels < 1 || channels > 16) {
            throw new IllegalArgumentException("channels must be 1..16: " + channels);
        }
        if (stallCheck.isNegative() || stallCheck.isZero()) {
            throw new IllegalArgumentException("stall check interval must be positive: " + stallCheck);
        }
    }

    public static CollectiveOptions defaults() {
        return new CollectiveOptions(DEFAULT_TIMEOUT, 256 * 1024, 4, 1, null, Duration.ofMillis(200));
    }

    /** Defaults overridden by the RDMA4J_* variables present in {@code env}. */
    public static CollectiveOptions fromEnv(Map<String, String> env) {
        CollectiveOptions o = defaults();
        String v;
        if ((v = env.get("RDMA4J_ALGO")) != null && !v.isBlank()) {
            o = o.withAlgorithm(Algorithm.parse(v));
        }
        if ((v = env.get("RDMA4J_TIMEOUT_MS")) != null && !v.isBlank()) {
            o = o.withTimeout(Duration.ofMillis(parse("RDMA4J_TIMEOUT_MS", v)));
        }
        if ((v = env.get("RDMA4J_CHUNK_BYTES")) != null && !v.isBlank()) {
            o = o.withChunkBytes((int) parse("RDMA4J_CHUNK_BYTES", v));
        }
        if ((v = env.get("RDMA4J_WINDOW")) != null && !v.isBlank()) {
            o = o.withWindow((int) parse("RDMA4J_WINDOW", v));
        }
        if ((v = env.get("RDMA4J_CHANNELS")) != null && !v.isBlank()) {
            o = o.withChannels((int) parse("RDMA4J_CHANNELS", v));
        }
        return o;
    }

    private static long parse(String name, String v) {
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be an integer, got '" + v + "'");
        }
    }

    public CollectiveOptions withTimeout(Duration t) {
        return new CollectiveOptions(t, chunkBytes, window, channels, algorithm, stallCheck);
    }

    public CollectiveOptions withChunkBytes(int c) {
        return new CollectiveOptions(timeout, c, window, channels, algorithm, stallCheck);
    }

    public CollectiveOptions withWindow(int w) {
        return new CollectiveOptions(timeout, chunkBytes, w, channels, algorithm, stallCheck);
    }

    public CollectiveOptions withChannels(int c) {
        return new CollectiveOptions(timeout, chunkBytes, window, c, algorithm, stallCheck);
    }

    /** Forces an allreduce algorithm (null: let the policy choose). */
    public CollectiveOptions withAlgorithm(Algorithm a) {
        return new CollectiveOptions(timeout, chunkBytes, window, channels, a, stallCheck);
    }

    public CollectiveOptions withStallCheck(Duration d) {
        return new CollectiveOptions(timeout, chunkBytes, window, channels, algorithm, d);
    }
}
