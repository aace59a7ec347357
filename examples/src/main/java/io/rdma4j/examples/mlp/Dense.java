package io.rdma4j.examples.mlp;

import java.util.SplittableRandom;

/**
 * A fully connected layer y = W x + b over a batch (row-major: sample b's vector at b*width).
 * Its parameters live in one array, W (out x in, row-major) followed by b, and so does its
 * gradient, so that the whole layer's gradient is one contiguous buffer for the allreduce.
 */
public final class Dense {
    private final int in;
    private final int out;
    private final float[] params;
    private final float[] grads;

    /** He initialisation (ReLU follows), zero bias, drawn from {@code rng}. */
    public Dense(int in, int out, SplittableRandom rng) {
        if (in < 1 || out < 1) {
            throw new IllegalArgumentException("layer of " + in + " -> " + out + " units");
        }
        this.in = in;
        this.out = out;
        this.params = new float[out * in + out];
        this.grads = new float[params.length];
        double scale = Math.sqrt(2.0 / in);
        for (int i = 0; i < out * in; i++) {
            params[i] = (float) (rng.nextGaussian() * scale);
        }
    }

    public int inputs() {
        return in;
    }

    public int outputs() {
        return out;
    }

    /** W then b; the trainer's view for broadcasting and checking. */
    public float[] parameters() {
        return params;
    }

    /** dW then db of the last {@link #backward}. */
    public float[] gradients() {
        return grads;
    }

    public void forward(float[] x, int batch, float[] y) {
        int bias = out * in;
        for (int s = 0; s < batch; s++) {
            int xo = s * in;
            int yo = s * out;
            for (int o = 0; o < out; o++) {
                float acc = params[bias + o];
                int w = o * in;
                for (int i = 0; i < in; i++) {
                    acc += params[w + i] * x[xo + i];
                }
                y[yo + o] = acc;
            }
        }
    }

    /**
     * Overwrites the gradient with dL/dW = dy^T x and dL/db = column sums of dy, and, if
     * {@code dx} is not null, writes dL/dx = dy W (before any update: W is read as it was in
     * the forward pass).
     */
    public void backward(float[] x, float[] dy, int batch, float[] dx) {
        int bias = out * in;
        java.util.Arrays.fill(grads, 0f);
        for (int s = 0; s < batch; s++) {
            int xo = s * in;
            int yo = s * out;
            for (int o = 0; o < out; o++) {
                float d = dy[yo + o];
                grads[bias + o] += d;
                int w = o * in;
                for (int i = 0; i < in; i++) {
                    grads[w + i] += d * x[xo + i];
                }
            }
        }
        if (dx != null) {
            for (int s = 0; s < batch; s++) {
                int xo = s * in;
                int yo = s * out;
                for (int i = 0; i < in; i++) {
                    float acc = 0f;
                    for (int o = 0; o < out; o++) {
                        acc += dy[yo + o] * params[o * in + i];
                    }
                    dx[xo + i] = acc;
                }
            }
        }
    }

    /** Plain SGD step with the (averaged) gradient. */
    public void sgd(float learningRate) {
        for (int i = 0; i < params.length; i++) {
            params[i] -= learningRate * grads[i];
        }
    }
}
