package io.rdma4j.examples.djl;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.djl.DataParallel;
import io.rdma4j.examples.FrameworkExample;
import io.rdma4j.examples.FrameworkExample.Options;
import io.rdma4j.examples.FrameworkExample.Shard;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * A DJL (PyTorch engine) MLP trained data-parallel over rdma4j with {@code EasyTrain.fit}: each
 * rank fits its shard of every global batch of a synthetic classification problem,
 * {@link DataParallel} averages the gradients, and at the end rank 0 gathers every rank's
 * parameter bits and compares them. Runs offline: the natives come from the pytorch-native-cpu
 * jar, and without it DJL fails instead of downloading.
 *
 * <pre>
 * OMP_NUM_THREADS=1 bin/rdma4j launch --nproc-per-node 2 --classpath "examples/target/classes:examples/target/lib/*" \
 *     --main-class io.rdma4j.examples.djl.DjlDataParallelMlp
 * </pre>
 *
 * Options: see {@link FrameworkExample}. Exit status 1 when the ranks' parameters differ.
 */
public final class DjlDataParallelMlp {
    private DjlDataParallelMlp() {
    }

    public static void main(String[] args) throws Exception {
        if (System.getenv("DJL_OFFLINE") == null) {
            System.setProperty("ai.djl.offline", "true");
        }
        int status;
        try (Communicator comm = Communicator.fromEnvironment();
             DataParallel dp = new DataParallel(comm);
             Model model = Model.newInstance("mlp");
             NDManager data = NDManager.newBaseManager()) {
            Options o = Options.parse(args, comm.size());
            model.setBlock(new SequentialBlock()
                    .add(Linear.builder().setUnits(o.hidden()).build()).add(Activation::relu)
                    .add(Linear.builder().setUnits(o.hidden()).build()).add(Activation::relu)
                    .add(Linear.builder().setUnits(o.classes()).build()));
            DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(Optimizer.adam().optLearningRateTracker(Tracker.fixed(1e-3f)).build())
                    .addTrainingListeners(dp);
            try (Trainer trainer = model.newTrainer(config)) {
                Engine.getInstance().setRandomSeed(comm.rank());   // rank 0's initial values win
                dp.initialize(trainer, new Shape(o.rows(comm.size()), o.features()));
                EasyTrain.fit(trainer, 1, shards(data, o, comm, 0, o.warmupSteps()), null);
                ArrayDataset timed = shards(data, o, comm, o.warmupSteps(), o.steps());
                long commStart = dp.communicationNanos();
                long start = System.nanoTime();
                EasyTrain.fit(trainer, 1, timed, null);
                FrameworkExample.report(comm, o, parameterCount(model), "bucketed", System.nanoTime() - start,
                        dp.communicationNanos() - commStart, Double.NaN);
            }
            status = FrameworkExample.compareParameters(comm, bits(model));
        }
        System.exit(status);
    }

    private static ArrayDataset shards(NDManager data, Options o, Communicator comm, int firstStep, int steps) {
        int rows = o.rows(comm.size());
        float[] x = new float[Math.max(1, steps) * rows * o.features()];
        float[] y = new float[Math.max(1, steps) * rows];
        for (int s = 0; s < steps; s++) {
            Shard shard = Shard.of(o, comm, firstStep + s);
            System.arraycopy(shard.x(), 0, x, s * rows * o.features(), shard.x().length);
            for (int i = 0; i < rows; i++) {
                y[s * rows + i] = shard.labels()[i];
            }
        }
        int n = steps * rows;
        return new ArrayDataset.Builder()
                .setData(data.create(x, new Shape(Math.max(1, steps) * rows, o.features())).get("0:" + n))
                .optLabels(data.create(y, new Shape(Math.max(1, steps) * rows)).get("0:" + n))
                .setSampling(rows, false).build();
    }

    private static List<Parameter> parameters(Model model) {
        List<Parameter> params = new ArrayList<>();
        for (Pair<String, Parameter> p : model.getBlock().getParameters()) {
            params.add(p.getValue());
        }
        params.sort(Comparator.comparing(Parameter::getName));
        return params;
    }

    private static long parameterCount(Model model) {
        return parameters(model).stream().mapToLong(p -> p.getArray().size()).sum();
    }

    private static byte[] bits(Model model) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (Parameter p : parameters(model)) {
            NDArray a = p.getArray();
            ByteBuffer b = a.toByteBuffer(false);
            byte[] bytes = new byte[b.remaining()];
            b.get(bytes);
            out.writeBytes(bytes);
        }
        return out.toByteArray();
    }
}
