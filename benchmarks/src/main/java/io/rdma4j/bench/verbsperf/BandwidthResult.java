package io.rdma4j.bench.verbsperf;

/**
 * One row of a bandwidth report, computed the way perftest's print_report_bw does from the
 * post and completion timestamps: the average over the whole run and the peak, the best
 * per-message time over any stretch from a post to a later completion.
 *
 * @param peakMBps bandwidth peak in MB/s (perftest's MB = 2^20 bytes); 0 when not computed
 */
record BandwidthResult(int size, int iters, double peakMBps, double averageMBps, double msgRateMpps) {
    private static final double MB = 0x100000;

    /**
     * @param posted    nanoTime before posting work request i (set at the first request of each post list)
     * @param completed nanoTime when completion counting reached i + 1 requests (set at multiples of
     *                  {@code cqMod} and at the last request)
     * @param noPeak    when set, only {@code posted[0]} and {@code completed[0]} (start, end) are used
     */
    static BandwidthResult compute(int size, int iters, int postList, int cqMod, long[] posted, long[] completed,
                                   boolean noPeak) {
        long total = noPeak ? completed[0] - posted[0] : completed[iters - 1] - posted[0];
        double seconds = total / 1e9;
        double average = (double) size * iters / (seconds * MB);
        double rate = iters / (seconds * 1e6);
        double peak = 0;
        if (!noPeak) {
            double best = Math.max(1, total); // per-message ns of the best stretch
            for (int i = 0; i < iters; i += postList) {
                for (int j = roundUp(i + 1, cqMod) - 1; j < iters; j += cqMod) {
                    best = Math.min(best, (double) (completed[j] - posted[i]) / (j - i + 1));
                }
                if (iters % cqMod != 0) { // the last request is signalled on its own
                    int j = iters - 1;
                    best = Math.min(best, (double) (completed[j] - posted[i]) / (j - i + 1));
                }
            }
            peak = size / (Math.max(best, 1e-3) / 1e9) / MB;
        }
        return new BandwidthResult(size, iters, peak, average, rate);
    }

    private static int roundUp(int v, int to) {
        return (v + to - 1) / to * to;
    }

    double[] toValues() {
        return new double[]{size, iters, peakMBps, averageMBps, msgRateMpps};
    }

    static BandwidthResult fromValues(double[] v) {
        if (v.length != 5) {
            throw new IllegalArgumentException("a bandwidth result has 5 values, got " + v.length);
        }
        return new BandwidthResult((int) v[0], (int) v[1], v[2], v[3], v[4]);
    }
}
