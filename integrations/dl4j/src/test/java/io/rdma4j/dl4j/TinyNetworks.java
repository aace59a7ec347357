package io.rdma4j.dl4j;

import org.deeplearning4j.datasets.iterator.ExistingDataSetIterator;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.dataset.api.iterator.DataSetIterator;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.config.Sgd;
import org.nd4j.linalg.lossfunctions.LossFunctions;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/** The small networks and synthetic data of the DL4J tests: deterministic in their arguments. */
final class TinyNetworks {
    static final int FEATURES = 12;
    static final int HIDDEN = 24;
    static final int CLASSES = 4;

    private TinyNetworks() {
    }

    /** {@code kind}: mlp (MultiLayerNetwork) or graph (ComputationGraph); {@code updater}: sgd or adam. */
    static Model build(String kind, DataType type, String updater, long seed) {
        IUpdater u = switch (updater) {
            case "sgd" -> new Sgd(0.1);
            case "adam" -> new Adam(0.01);
            default -> throw new IllegalArgumentException("updater " + updater);
        };
        NeuralNetConfiguration.Builder base = new NeuralNetConfiguration.Builder().seed(seed).dataType(type).updater(u);
        DenseLayer hidden = new DenseLayer.Builder().nIn(FEATURES).nOut(HIDDEN).activation(Activation.TANH).build();
        OutputLayer out = new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(HIDDEN).nOut(CLASSES)
                .activation(Activation.SOFTMAX).build();
        return switch (kind) {
            case "mlp" -> {
                MultiLayerNetwork n = new MultiLayerNetwork(base.list().layer(hidden).layer(out).build());
                n.init();
                yield n;
            }
            case "graph" -> {
                ComputationGraph g = new ComputationGraph(base.graphBuilder().addInputs("in")
                        .addLayer("hidden", hidden, "in").addLayer("out", out, "hidden").setOutputs("out").build());
                g.init();
                yield g;
            }
            default -> throw new IllegalArgumentException("network kind " + kind);
        };
    }

    /** Global batch {@code step}: {@code rows} examples of a noisy linear classification problem. */
    static DataSet globalBatch(int step, int rows, DataType type) {
        SplittableRandom random = new SplittableRandom(7919L * step + 17);
        double[][] x = new double[rows][FEATURES];
        double[][] y = new double[rows][CLASSES];
        for (int i = 0; i < rows; i++) {
            double best = Double.NEGATIVE_INFINITY;
            int label = 0;
            for (int f = 0; f < FEATURES; f++) {
                x[i][f] = random.nextDouble(-1, 1);
            }
            for (int c = 0; c < CLASSES; c++) {
                double score = x[i][c] - 0.5 * x[i][(c + 3) % FEATURES] + 0.1 * random.nextGaussian();
                if (score > best) {
                    best = score;
                    label = c;
                }
            }
            y[i][label] = 1;
        }
        return new DataSet(Nd4j.create(x).castTo(type), Nd4j.create(y).castTo(type));
    }

    /** Rows {@code [shard * rows, (shard + 1) * rows)} of global batch {@code step}. */
    static DataSet shard(DataSet global, int shard, int rows) {
        return (DataSet) global.getRange(shard * rows, (shard + 1) * rows);
    }

    /** Rank {@code rank}'s shards of global batches 0 .. steps-1, in order. */
    static DataSetIterator shards(int steps, int ranks, int rank, int rowsPerRank, DataType type) {
        List<DataSet> list = new ArrayList<>();
        for (int s = 0; s < steps; s++) {
            list.add(shard(globalBatch(s, ranks * rowsPerRank, type), rank, rowsPerRank));
        }
        return new ExistingDataSetIterator(list);
    }

    /** Sets the iteration and epoch counts, as a network resumed from a checkpoint has them. */
    static void setCounts(Model model, int iterations, int epochs) {
        switch (model) {
            case MultiLayerNetwork n -> {
                n.setIterationCount(iterations);
                n.setEpochCount(epochs);
            }
            case ComputationGraph g -> {
                g.getConfiguration().setIterationCount(iterations);
                g.getConfiguration().setEpochCount(epochs);
            }
            default -> throw new IllegalArgumentException(model.getClass().getName());
        }
    }

    static int iterations(Model model) {
        return switch (model) {
            case MultiLayerNetwork n -> n.getIterationCount();
            case ComputationGraph g -> g.getIterationCount();
            default -> throw new IllegalArgumentException(model.getClass().getName());
        };
    }

    static int epochs(Model model) {
        return switch (model) {
            case MultiLayerNetwork n -> n.getEpochCount();
            case ComputationGraph g -> g.getConfiguration().getEpochCount();
            default -> throw new IllegalArgumentException(model.getClass().getName());
        };
    }

    /** The raw bits of the network's parameters, in order. */
    static byte[] parameterBits(Model model) {
        INDArray p = model.params();
        ByteBuffer b;
        if (p.dataType() == DataType.DOUBLE) {
            double[] v = p.toDoubleVector();
            b = ByteBuffer.allocate(v.length * Double.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            b.asDoubleBuffer().put(v);
        } else {
            float[] v = p.toFloatVector();
            b = ByteBuffer.allocate(v.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            b.asFloatBuffer().put(v);
        }
        return b.array();
    }
}
