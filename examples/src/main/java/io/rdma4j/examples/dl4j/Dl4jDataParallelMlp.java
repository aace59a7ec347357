package io.rdma4j.examples.dl4j;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.dl4j.DataParallel;
import io.rdma4j.transport.RegisteredBuffer;
import org.deeplearning4j.datasets.iterator.ExistingDataSetIterator;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A Deeplearning4j MLP trained data-parallel over rdma4j: each rank fits its shard of every
 * global batch of a synthetic classification problem, {@link DataParallel} averages the
 * gradients, and at the end rank 0 gathers every rank's parameter bits and compares them.
 *
 * <pre>
 * bin/rdma4j launch --nproc-per-node 2 --classpath "examples/target/classes:examples/target/lib/*" \
 *     --java-opt --sun-misc-unsafe-memory-access=allow --main-class io.rdma4j.examples.dl4j.Dl4jDataParallelMlp
 * </pre>
 *
 * Options: {@code --steps N} timed steps (default 200), {@code --warmup-steps N} steps before them,
 * not timed (20), {@code --global-batch N} (256, a multiple of the rank count), {@code --features N}
 * (64), {@code --hidden N} (256), {@code --classes N} (10).
 * Exit status 1 when the ranks' parameters differ.
 */
public final class Dl4jDataParallelMlp {
    private Dl4jDataParallelMlp() {
    }

    public static void main(String[] args) {
        int steps = option(args, "--steps", 200);
        int warmup = option(args, "--warmup-steps", 20);
        int globalBatch = option(args, "--global-batch", 256);
        int features = option(args, "--features", 64);
        int hidden = option(args, "--hidden", 256);
        int classes = option(args, "--classes", 10);
        try (Communicator comm = Communicator.fromEnvironment()) {
            if (globalBatch % comm.size() != 0) {
                throw new IllegalArgumentException("--global-batch " + globalBatch + " is not a multiple of the "
                        + comm.size() + " ranks");
            }
            int rows = globalBatch / comm.size();
            MultiLayerNetwork net = new MultiLayerNetwork(new NeuralNetConfiguration.Builder()
                    .seed(42).updater(new Adam(1e-3)).list()
                    .layer(new DenseLayer.Builder().nIn(features).nOut(hidden).activation(Activation.RELU).build())
                    .layer(new DenseLayer.Builder().nIn(hidden).nOut(hidden).activation(Activation.RELU).build())
                    .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(hidden).nOut(classes)
                            .activation(Activation.SOFTMAX).build())
                    .build());
            net.init();
            List<DataSet> warmupShard = new ArrayList<>();
            List<DataSet> shard = new ArrayList<>();
            for (int s = 0; s < warmup + steps; s++) {
                (s < warmup ? warmupShard : shard).add(batch(s, comm.rank() * rows, rows, features, classes));
            }
            try (DataParallel dp = DataParallel.attach(comm, net)) {
                if (warmup > 0) {
                    dp.fit(new ExistingDataSetIterator(warmupShard));
                }
                long start = System.nanoTime();
                long commStart = dp.communicationNanos();
                dp.fit(new ExistingDataSetIterator(shard));
                double stepMs = (System.nanoTime() - start) / 1e6 / steps;
                double commMs = (dp.communicationNanos() - commStart) / 1e6 / steps;
                if (comm.rank() == 0) {
                    System.out.printf("%d steps on %d rank(s), global batch %d, %d parameters, %s gradient allreduce: "
                                    + "%.3f ms per step, %.3f ms of it communication (%.0f%%); last loss %.4f%n",
                            steps, comm.size(), globalBatch, net.numParams(), dp.zeroCopy() ? "zero-copy" : "staged",
                            stepMs, commMs, 100 * commMs / stepMs, net.score());
                }
            }
            int differing = compareParameters(comm, net.params());
            if (comm.rank() == 0) {
                if (differing < 0) {
                    System.out.println("parameters bit-identical across " + comm.size() + " ranks");
                } else {
                    System.out.println("parameters DIFFER: rank " + differing + "'s are not rank 0's");
                    System.exit(1);
                }
            }
        }
    }

    /** Rank 0 gathers every rank's parameter bits; returns the first rank whose bits differ from its own, or -1. */
    private static int compareParameters(Communicator comm, INDArray params) {
        float[] mine = params.toFloatVector();
        long bytes = (long) mine.length * Float.BYTES;
        try (RegisteredBuffer send = comm.allocate(bytes); RegisteredBuffer all = comm.allocate(bytes * comm.size())) {
            MemorySegment.copy(mine, 0, send.segment(), ValueLayout.JAVA_FLOAT, 0, mine.length);
            comm.allGather(send.segment(), all.segment(), bytes, DataType.U8);
            MemorySegment a = all.segment();
            for (int r = 1; r < comm.size(); r++) {
                if (MemorySegment.mismatch(a, 0, bytes, a, r * bytes, (r + 1) * bytes) >= 0) {
                    return r;
                }
            }
            return -1;
        }
    }

    /** Rows [first, first + rows) of global batch {@code step}: the class is the arg max of a fixed linear map. */
    private static DataSet batch(int step, int first, int rows, int features, int classes) {
        float[][] x = new float[rows][features];
        float[][] y = new float[rows][classes];
        for (int i = 0; i < rows; i++) {
            SplittableRandom random = new SplittableRandom(1_000_003L * step + first + i);
            int label = 0;
            double best = Double.NEGATIVE_INFINITY;
            for (int f = 0; f < features; f++) {
                x[i][f] = (float) random.nextDouble(-1, 1);
            }
            for (int c = 0; c < classes; c++) {
                double score = 0;
                for (int f = c; f < features; f += classes) {
                    score += x[i][f];
                }
                if (score > best) {
                    best = score;
                    label = c;
                }
            }
            y[i][label] = 1;
        }
        return new DataSet(Nd4j.create(x), Nd4j.create(y));
    }

    private static int option(String[] args, String name, int fallback) {
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals(name)) {
                return Integer.parseInt(args[i + 1]);
            }
        }
        return fallback;
    }
}
