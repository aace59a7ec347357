package io.rdma4j.bench;

/**
 * One timed configuration (a size, in or out of place): the per-iteration time averaged over
 * the ranks, the bandwidths derived from it, and the number of wrong elements over all ranks
 * ({@link #NOT_CHECKED} without {@code -c 1}).
 */
public record Measurement(double timeUs, double algBw, double busBw, long wrong, int iterations) {
    public static final long NOT_CHECKED = -1;

    public static Measurement of(double seconds, long algBytes, double busFactor, long wrong, int iterations) {
        double alg = Bandwidth.algBw(algBytes, seconds);
        return new Measurement(seconds * 1e6, alg, Bandwidth.busBw(alg, busFactor), wrong, iterations);
    }
}
