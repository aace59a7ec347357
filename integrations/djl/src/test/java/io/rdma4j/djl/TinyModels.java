package io.rdma4j.djl;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.nn.norm.BatchNorm;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;

/** The small model and synthetic data of the DJL tests: deterministic in their arguments. */
final class TinyModels {
    static final int FEATURES = 12;
    static final int CLASSES = 4;

    private TinyModels() {
    }

    /** An MLP; its parameters come from {@code seed} when the trainer initializes them. */
    static Model model() {
        return model(false);
    }

    /**
     * The MLP, with {@code batchNorm} a BatchNorm after its first layer: running statistics that
     * every rank's forward passes update from its own batches (parameters without gradients).
     */
    static Model model(boolean batchNorm) {
        Model model = Model.newInstance("mlp");
        SequentialBlock block = new SequentialBlock().add(Linear.builder().setUnits(24).build());
        if (batchNorm) {
            block.add(BatchNorm.builder().build());
        }
        model.setBlock(block.add(Activation::tanh).add(Linear.builder().setUnits(CLASSES).build()));
        return model;
    }

    /** A trainer of {@code model} with {@code optimizer} (sgd or adam) and the given listeners. */
    static Trainer trainer(Model model, String optimizer, TrainingListener... listeners) {
        Optimizer o = switch (optimizer) {
            case "sgd" -> Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.1f)).build();
            case "adam" -> Optimizer.adam().optLearningRateTracker(Tracker.fixed(0.01f)).build();
            default -> throw new IllegalArgumentException("optimizer " + optimizer);
        };
        return model.newTrainer(new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss()).optOptimizer(o)
                .addTrainingListeners(listeners));
    }

    static void seed(int seed) {
        Engine.getInstance().setRandomSeed(seed);
    }

    static Shape inputShape(int rows) {
        return new Shape(rows, FEATURES);
    }

    /** Features and labels (class indices as floats) of global batch {@code step}, {@code rows} rows. */
    static float[][] globalBatch(int step, int rows) {
        SplittableRandom random = new SplittableRandom(7919L * step + 17);
        float[] x = new float[rows * FEATURES];
        float[] y = new float[rows];
        for (int i = 0; i < rows; i++) {
            double best = Double.NEGATIVE_INFINITY;
            for (int f = 0; f < FEATURES; f++) {
                x[i * FEATURES + f] = (float) random.nextDouble(-1, 1);
            }
            for (int c = 0; c < CLASSES; c++) {
                double score = x[i * FEATURES + c] - 0.5 * x[i * FEATURES + (c + 3) % FEATURES] + 0.1 * random.nextGaussian();
                if (score > best) {
                    best = score;
                    y[i] = c;
                }
            }
        }
        return new float[][] {x, y};
    }

    /** Rows {@code [shard * rows, (shard + 1) * rows)} of global batch {@code step} as (features, labels). */
    static NDArray[] shard(NDManager manager, int step, int ranks, int shard, int rows) {
        float[][] global = globalBatch(step, ranks * rows);
        float[] x = new float[rows * FEATURES];
        float[] y = new float[rows];
        System.arraycopy(global[0], shard * rows * FEATURES, x, 0, x.length);
        System.arraycopy(global[1], shard * rows, y, 0, y.length);
        return new NDArray[] {manager.create(x, new Shape(rows, FEATURES)), manager.create(y, new Shape(rows))};
    }

    /** Rank {@code rank}'s shards of global batches 0 .. steps-1, in order, one batch per shard. */
    static ArrayDataset shards(NDManager manager, int steps, int ranks, int rank, int rows) {
        List<NDArray> xs = new ArrayList<>();
        List<NDArray> ys = new ArrayList<>();
        for (int s = 0; s < steps; s++) {
            NDArray[] xy = shard(manager, s, ranks, rank, rows);
            xs.add(xy[0]);
            ys.add(xy[1]);
        }
        NDArray x = xs.size() == 1 ? xs.getFirst() : ai.djl.ndarray.NDArrays.concat(new ai.djl.ndarray.NDList(xs));
        NDArray y = ys.size() == 1 ? ys.getFirst() : ai.djl.ndarray.NDArrays.concat(new ai.djl.ndarray.NDList(ys));
        return new ArrayDataset.Builder().setData(x).optLabels(y).setSampling(rows, false).build();
    }

    /** The trainable parameters in name order. */
    static List<Parameter> parameters(Model model) {
        List<Parameter> params = allParameters(model);
        params.removeIf(p -> !p.requiresGradient());
        return params;
    }

    /** Every parameter (with or without gradients), in name order. */
    private static List<Parameter> allParameters(Model model) {
        List<Parameter> all = new ArrayList<>();
        for (Pair<String, Parameter> p : model.getBlock().getParameters()) {
            all.add(p.getValue());
        }
        all.sort(Comparator.comparing(Parameter::getName));
        return all;
    }

    /** The raw bits of all parameters (with or without gradients), in name order. */
    static byte[] parameterBits(Model model) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (Parameter p : allParameters(model)) {
            ByteBuffer b = p.getArray().toByteBuffer(false);
            byte[] bytes = new byte[b.remaining()];
            b.get(bytes);
            out.writeBytes(bytes);
        }
        return out.toByteArray();
    }

}
