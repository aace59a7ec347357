package io.rdma4j.bench.verbsperf;

import java.util.Arrays;

/**
 * One row of a latency report, computed the way perftest's print_report_lat does: the samples
 * are the times between consecutive posts of a ping-pong (one round trip each) halved, sorted,
 * with the two largest dropped (LAT_MEASURE_TAIL); typical is the median. Unlike perftest,
 * the standard deviation is computed in floating point (perftest truncates each deviation to
 * an int).
 */
record LatencyResult(int size, int iters, double minUs, double maxUs, double typicalUs, double averageUs,
                     double stdevUs, double p99Us, double p999Us) {
    private static final int TAIL = 2;

    /**
     * @param posted  nanoTime at each of the {@code iters} posts
     * @param scratch at least {@code iters - 1} longs for the sorted samples (no allocation here)
     */
    static LatencyResult compute(int size, int iters, long[] posted, long[] scratch) {
        int samples = iters - 1;
        for (int i = 0; i < samples; i++) {
            scratch[i] = posted[i + 1] - posted[i];
        }
        Arrays.sort(scratch, 0, samples);
        int n = samples - TAIL;
        double toUs = 1e3 * 2; // ns -> us, round trip -> one way
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += scratch[i] / toUs;
        }
        double average = sum / n;
        double squares = 0;
        for (int i = 0; i < n; i++) {
            double d = average - scratch[i] / toUs;
            squares += d * d;
        }
        long median = (n - 1) % 2 != 0 ? (scratch[n / 2] + scratch[n / 2 - 1]) / 2 : scratch[n / 2];
        int i99 = (int) Math.ceil(n * 0.99);
        int i999 = (int) Math.ceil(n * 0.999);
        return new LatencyResult(size, iters, scratch[0] / toUs, scratch[n] / toUs, median / toUs, average,
                Math.sqrt(squares / n), scratch[i99] / toUs, scratch[i999] / toUs);
    }
}
