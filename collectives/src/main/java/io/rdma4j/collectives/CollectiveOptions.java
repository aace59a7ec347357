package io.rdma4j.collectives;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportConfig.Provider;

import java.time.Duration;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * Tunables of a communicator, settable by builder and by environment variables:
 * <table>
 * <caption>environment variables</caption>
 * <tr><td>RDMA4J_ALGO</td><td>force an allreduce algorithm: ring, tree, rhd, twohop, window
 *     (an algorithm that cannot run on the group falls back to the policy's choice)</td></tr>
 * <tr><td>RDMA4J_TIMEOUT_MS</td><td>no-progress timeout of every collective (default 300000)</td></tr>
 * <tr><td>RDMA4J_CHUNK_BYTES</td><td>pipeline chunk size (default: the transport's, see
 *     {@link #forTransport})</td></tr>
 * <tr><td>RDMA4J_WINDOW</td><td>chunks in flight per pipeline (default: the transport's)</td></tr>
 * <tr><td>RDMA4J_CHANNELS</td><td>independent rings for large allreduces (default 1)</td></tr>
 * </table>
 */
public record CollectiveOptions(Duration timeout, int chunkBytes, int window, int channels, Algorithm algorithm,
                                Duration stallCheck) {

    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(5);
    /** {@link #chunkBytes()} or {@link #window()} left to the transport: see {@link #forTransport}. */
    public static final int TRANSPORT_DEFAULT = 0;
    /** The pipeline shape on shared memory and TCP. */
    public static final int CHUNK_BYTES = 256 * 1024, WINDOW = 4;
    /**
     * The chunk on TCP when the host's ranks do not outnumber its CPUs: each chunk costs a few
     * system calls and a wake-up of the receiver, which 512 KiB pay half as often. Measured with
     * {@code allreduce-perf --ranks 2 -t tcp -b 256K -e 64M -f 4 -n 100 -w 20 -R 3 -p out} and
     * {@code RDMA4J_CHUNK_BYTES} 256K / 512K / 1M taking turns on 2 cores (two passes each): 1 MiB
     * 299-339 / 271-283 / 272-284 us, 16 MiB 5.16-5.35 / 4.98-5.03 / 6.09-6.31 ms. With 4 ranks on
     * those 2 cores the ring's 16-64 MiB took about 15% longer with 512 KiB chunks than with 256,
     * and shared memory moved by neither; so only this case takes it. To measure again, run the
     * same command with the chunk sizes taking turns, with as many ranks as the host has CPUs.
     */
    public static final int TCP_CHUNK_BYTES = 512 * 1024;
    /**
     * The pipeline shape on verbs, as NCCL's over InfiniBand (8 steps of 512 KiB). Of six shapes
     * from 64 KiB x 16 to 512 KiB x 8, measured with a 2-rank allreduce on Soft-RoCE, three passes
     * taking turns in one boot, it had the lowest mean time at 1 and 4 MiB and the second lowest
     * at 256 KiB, and beat 256 KiB x 4 at 256 KiB and 1 MiB in every pass; docs/verbs-path.md has
     * the numbers and how to measure again.
     */
    public static final int VERBS_CHUNK_BYTES = 512 * 1024, VERBS_WINDOW = 8;

    public CollectiveOptions {
        // the engine counts both in nanoseconds: a longer one failed every collective on every rank
        if (timeout.isNegative() || timeout.isZero() || timeout.compareTo(TransportConfig.MAX_TIMEOUT) > 0) {
            throw new IllegalArgumentException("timeout must be positive and at most "
                    + TransportConfig.MAX_TIMEOUT.toMillis() + " ms: " + timeout);
        }
        if (chunkBytes != TRANSPORT_DEFAULT && (chunkBytes < 64 || (chunkBytes & 7) != 0)) {
            throw new IllegalArgumentException("chunk bytes must be a multiple of 8, >= 64: " + chunkBytes);
        }
        if (window != TRANSPORT_DEFAULT && (window < 1 || window > 64)) {
            throw new IllegalArgumentException("window must be 1..64: " + window);
        }
        if (channels < 1 || channels > 16) {
            throw new IllegalArgumentException("channels must be 1..16: " + channels);
        }
        if (stallCheck.isNegative() || stallCheck.isZero() || stallCheck.compareTo(TransportConfig.MAX_TIMEOUT) > 0) {
            throw new IllegalArgumentException("stall check interval must be positive and at most "
                    + TransportConfig.MAX_TIMEOUT.toMillis() + " ms: " + stallCheck);
        }
    }

    /** The defaults: chunk size and window are the transport's ({@link #forTransport}). */
    public static CollectiveOptions defaults() {
        return new CollectiveOptions(DEFAULT_TIMEOUT, TRANSPORT_DEFAULT, TRANSPORT_DEFAULT, 1, null,
                Duration.ofMillis(200));
    }

    /**
     * These options with the chunk size and window they leave to the transport filled in for
     * {@code provider} (a {@link io.rdma4j.transport.Transport#provider()} name; one that names no
     * {@link Provider}, e.g. of a transport of the application's own, gets the shared-memory and
     * TCP shape): {@link #VERBS_CHUNK_BYTES} x {@link #VERBS_WINDOW} on verbs, where every
     * chunk is a rendezvous and a deeper pipeline keeps the NIC busy across the handshakes,
     * {@link #CHUNK_BYTES} x {@link #WINDOW} elsewhere, but chunks of {@link #TCP_CHUNK_BYTES} on
     * TCP unless {@code ranksOutnumberCpus} (the host's ranks outnumber the CPUs it has online).
     * Values set explicitly stay.
     */
    public CollectiveOptions forTransport(String provider, boolean ranksOutnumberCpus) {
        boolean verbs = Provider.VERBS.name().equalsIgnoreCase(provider);
        boolean roomyTcp = !ranksOutnumberCpus && Provider.TCP.name().equalsIgnoreCase(provider);
        int c = chunkBytes != TRANSPORT_DEFAULT ? chunkBytes
                : verbs ? VERBS_CHUNK_BYTES : roomyTcp ? TCP_CHUNK_BYTES : CHUNK_BYTES;
        int w = window != TRANSPORT_DEFAULT ? window : verbs ? VERBS_WINDOW : WINDOW;
        return new CollectiveOptions(timeout, c, w, channels, algorithm, stallCheck);
    }

    /**
     * Defaults overridden by the RDMA4J_* variables present in {@code env}; a value out of its
     * range (0 included: unset is how a variable leaves chunk and window to the transport) is
     * refused with a message that names the variable.
     */
    public static CollectiveOptions fromEnvironment(Map<String, String> env) {
        CollectiveOptions o = defaults();
        o = set(env, "RDMA4J_ALGO", o, (b, v) -> b.withAlgorithm(Algorithm.parse(v)));
        o = set(env, "RDMA4J_TIMEOUT_MS", o, (b, v) -> b.withTimeout(Duration.ofMillis(parseLong(v))));
        o = set(env, "RDMA4J_CHUNK_BYTES", o, (b, v) -> b.withChunkBytes(notTransportDefault(parseInt(v))));
        o = set(env, "RDMA4J_WINDOW", o, (b, v) -> b.withWindow(notTransportDefault(parseInt(v))));
        o = set(env, "RDMA4J_CHANNELS", o, (b, v) -> b.withChannels(parseInt(v)));
        return o;
    }

    /** {@code options} with variable {@code name} of {@code env} applied, if set and not blank. */
    private static CollectiveOptions set(Map<String, String> env, String name, CollectiveOptions options,
                                         BiFunction<CollectiveOptions, String, CollectiveOptions> apply) {
        String v = env.get(name);
        if (v == null || v.isBlank()) {
            return options;
        }
        try {
            return apply.apply(options, v.trim());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(name + "=" + v.trim() + ": " + e.getMessage(), e);
        }
    }

    /** An int setting; a value beyond int is refused here rather than wrapped into a valid-looking one. */
    private static int parseInt(String v) {
        long value = parseLong(v);
        if (value != (int) value) {
            throw new IllegalArgumentException("out of range");
        }
        return (int) value;
    }

    private static long parseLong(String v) {
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not an integer");
        }
    }

    private static int notTransportDefault(int value) {
        if (value == TRANSPORT_DEFAULT) {
            throw new IllegalArgumentException("0 is not a size (leave the variable unset for the transport's default)");
        }
        return value;
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
