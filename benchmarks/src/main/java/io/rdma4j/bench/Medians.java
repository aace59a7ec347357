package io.rdma4j.bench;

import java.util.Arrays;

/** The median of a run of measurements, for the tools that report it beside (or instead of) a mean. */
final class Medians {
    private Medians() {
    }

    /** The median of {@code values[from, from + count)} (the mean of the middle two for an even count). */
    static double of(double[] values, int from, int count) {
        if (count < 1) {
            throw new IllegalArgumentException("no values");
        }
        double[] sorted = Arrays.copyOfRange(values, from, from + count);
        Arrays.sort(sorted);
        int m = count / 2;
        return count % 2 == 1 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
    }

    static double of(double[] values) {
        return of(values, 0, values.length);
    }
}
