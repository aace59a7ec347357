package io.rdma4j.examples;

import java.util.SplittableRandom;

/**
 * A deterministic, unbounded classification data set: {@code classes} Gaussian clusters in
 * {@code features} dimensions. Sample i depends only on (seed, i), so every rank can produce
 * its own shard of a global batch without the others, and a single process can produce the
 * same global batch to check the data-parallel run against.
 */
public final class SyntheticClassification {
    private final long seed;
    private final int features;
    private final int classes;
    private final float[] centers;

    public SyntheticClassification(long seed, int features, int classes) {
        if (features < 1 || classes < 2) {
            throw new IllegalArgumentException(features + " features, " + classes + " classes");
        }
        this.seed = seed;
        this.features = features;
        this.classes = classes;
        this.centers = new float[classes * features];
        SplittableRandom rng = new SplittableRandom(seed);
        for (int i = 0; i < centers.length; i++) {
            centers[i] = (float) (rng.nextGaussian() * 1.5);
        }
    }

    public int features() {
        return features;
    }

    public int classes() {
        return classes;
    }

    /** Writes samples first .. first+count-1 into {@code x} (count x features) and {@code labels}. */
    public void fill(long first, int count, float[] x, int[] labels) {
        for (int s = 0; s < count; s++) {
            // a generator per sample: sample i is the same whoever makes it
            SplittableRandom rng = new SplittableRandom(seed ^ ((first + s) * 0x9E3779B97F4A7C15L));
            int label = rng.nextInt(classes);
            labels[s] = label;
            for (int f = 0; f < features; f++) {
                x[s * features + f] = centers[label * features + f] + (float) rng.nextGaussian();
            }
        }
    }
}
