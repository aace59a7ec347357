package io.rdma4j.examples.mlp;

import java.util.List;
import java.util.SplittableRandom;
import java.util.function.IntConsumer;

/**
 * features -> hidden (ReLU) -> classes, softmax cross-entropy loss averaged over the batch.
 * Activations and their gradients use buffers sized once for the largest batch, so a training
 * step allocates nothing.
 */
public final class Mlp {
    /** Index of each layer in backward order, the order its gradient becomes final. */
    public static final int OUTPUT_LAYER = 0;
    public static final int HIDDEN_LAYER = 1;

    private final Dense hidden;
    private final Dense output;
    private final int maxBatch;
    private final float[] h;
    private final float[] logits;
    private final float[] dLogits;
    private final float[] dh;

    public Mlp(int features, int hiddenUnits, int classes, int maxBatch, long seed) {
        SplittableRandom rng = new SplittableRandom(seed);
        this.hidden = new Dense(features, hiddenUnits, rng);
        this.output = new Dense(hiddenUnits, classes, rng);
        this.maxBatch = maxBatch;
        this.h = new float[maxBatch * hiddenUnits];
        this.logits = new float[maxBatch * classes];
        this.dLogits = new float[maxBatch * classes];
        this.dh = new float[maxBatch * hiddenUnits];
    }

    /** The layers in backward order: {@link #OUTPUT_LAYER}, then {@link #HIDDEN_LAYER}. */
    public List<Dense> layersInBackwardOrder() {
        return List.of(output, hidden);
    }

    /**
     * Forward and backward over a batch. {@code gradientReady} is told each layer's index (in
     * backward order) as soon as that layer's gradient is final, while the backward pass goes
     * on: a data-parallel trainer starts that gradient's allreduce then.
     *
     * @return the batch's mean cross-entropy loss
     */
    public float lossAndGradients(float[] x, int[] labels, int batch, IntConsumer gradientReady) {
        if (batch < 1 || batch > maxBatch) {
            throw new IllegalArgumentException("batch of " + batch + " outside 1.." + maxBatch);
        }
        int hu = hidden.outputs();
        int classes = output.outputs();
        hidden.forward(x, batch, h);
        for (int i = 0; i < batch * hu; i++) {
            h[i] = Math.max(0f, h[i]);
        }
        output.forward(h, batch, logits);
        double loss = 0;
        float invBatch = 1f / batch;
        for (int s = 0; s < batch; s++) {
            int o = s * classes;
            float max = logits[o];
            for (int c = 1; c < classes; c++) {
                max = Math.max(max, logits[o + c]);
            }
            float sum = 0f;
            for (int c = 0; c < classes; c++) {
                dLogits[o + c] = (float) Math.exp(logits[o + c] - max);
                sum += dLogits[o + c];
            }
            for (int c = 0; c < classes; c++) {
                float p = dLogits[o + c] / sum;
                dLogits[o + c] = (p - (c == labels[s] ? 1f : 0f)) * invBatch;
            }
            loss += Math.log(sum) + max - logits[o + labels[s]];
        }
        output.backward(h, dLogits, batch, dh);
        gradientReady.accept(OUTPUT_LAYER);
        for (int i = 0; i < batch * hu; i++) {
            if (h[i] <= 0f) {
                dh[i] = 0f;
            }
        }
        hidden.backward(x, dh, batch, null);
        gradientReady.accept(HIDDEN_LAYER);
        return (float) (loss / batch);
    }

    public void sgd(float learningRate) {
        hidden.sgd(learningRate);
        output.sgd(learningRate);
    }
}
