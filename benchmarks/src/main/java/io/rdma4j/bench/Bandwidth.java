package io.rdma4j.bench;

/**
 * nccl-tests' bandwidth definitions (its doc/PERFORMANCE.md): algbw is the data size of the
 * operation over the time, in GB/s (10^9 bytes); busbw scales it by a per-collective factor so
 * that it is comparable to the link speed whatever the rank count.
 */
public final class Bandwidth {
    private Bandwidth() {
    }

    /** {@code bytes / seconds} in GB/s; 0 when no time was measured. */
    public static double algBw(long bytes, double seconds) {
        return seconds > 0 ? bytes / seconds / 1e9 : 0;
    }

    /** algbw times the collective's bus factor. */
    public static double busBw(double algBw, double busFactor) {
        return algBw * busFactor;
    }
}
