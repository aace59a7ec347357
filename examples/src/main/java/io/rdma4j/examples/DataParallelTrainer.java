package io.rdma4j.examples;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.examples.mlp.Dense;
import io.rdma4j.examples.mlp.Mlp;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * Data-parallel training of a small MLP, as a JVM trainer would embed rdma4j: every rank holds
 * the whole model, trains on its shard of each global batch, and steps with the gradient
 * averaged over all ranks (allreduce overlapping the backward pass, see {@link DdpGradientSync}),
 * so all ranks keep identical parameters and the run follows the single-process run on the
 * global batches (up to floating-point summation order).
 *
 * <p>Run under the launcher, e.g. {@code bin/rdma4j launch --nproc-per-node 4 --classpath CP
 * --main-class io.rdma4j.examples.DataParallelTrainer --steps 50}; options: --steps,
 * --global-batch, --features, --hidden, --classes, --lr, --seed, --out DIR (each rank writes
 * DIR/rank-R.bin, see {@link TrainingResult}).
 */
public final class DataParallelTrainer {

    /** Hyper-parameters; the global batch must divide evenly among the ranks. */
    public record Config(int steps, int globalBatch, int features, int hidden, int classes, float learningRate,
                         long seed) {
        public static Config defaults() {
            return new Config(30, 96, 16, 32, 4, 0.2f, 42);
        }

        /** Defaults overridden by {@code --name value} pairs; also returns --out through {@code out[0]}. */
        public static Config parse(String[] args, Path[] out) {
            Config c = defaults();
            for (int i = 0; i < args.length; i += 2) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(args[i] + " needs a value");
                }
                String v = args[i + 1];
                try {
                    c = option(c, args[i], v, out);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException(args[i] + " needs a number, got '" + v + "'");
                }
            }
            if (c.steps < 1 || c.globalBatch < 1 || c.features < 1 || c.hidden < 1 || c.classes < 2
                    || !(c.learningRate > 0) || !Float.isFinite(c.learningRate)) {
                throw new IllegalArgumentException("bad options " + c + ": steps, global batch, features and hidden"
                        + " at least 1, classes at least 2, a positive finite learning rate");
            }
            return c;
        }

        /** {@code c} with option {@code name} set to {@code v}. */
        private static Config option(Config c, String name, String v, Path[] out) {
            return switch (name) {
                case "--steps" -> new Config(Integer.parseInt(v), c.globalBatch, c.features, c.hidden, c.classes, c.learningRate, c.seed);
                case "--global-batch" -> new Config(c.steps, Integer.parseInt(v), c.features, c.hidden, c.classes, c.learningRate, c.seed);
                case "--features" -> new Config(c.steps, c.globalBatch, Integer.parseInt(v), c.hidden, c.classes, c.learningRate, c.seed);
                case "--hidden" -> new Config(c.steps, c.globalBatch, c.features, Integer.parseInt(v), c.classes, c.learningRate, c.seed);
                case "--classes" -> new Config(c.steps, c.globalBatch, c.features, c.hidden, Integer.parseInt(v), c.learningRate, c.seed);
                case "--lr" -> new Config(c.steps, c.globalBatch, c.features, c.hidden, c.classes, Float.parseFloat(v), c.seed);
                case "--seed" -> new Config(c.steps, c.globalBatch, c.features, c.hidden, c.classes, c.learningRate, Long.parseLong(v));
                case "--out" -> {
                    out[0] = Path.of(v);
                    yield c;
                }
                default -> throw new IllegalArgumentException("unknown option " + name
                        + " (--steps --global-batch --features --hidden --classes --lr --seed --out)");
            };
        }
    }

    private DataParallelTrainer() {
    }

    public static void main(String[] args) throws Exception {
        Path[] out = new Path[1];
        Config config = Config.parse(args, out);
        try (Communicator comm = Communicator.fromEnvironment()) {
            TrainingResult r = train(config, comm);
            float[] loss = r.losses();
            System.out.printf("rank %d/%d (%s): loss %.4f -> %.4f over %d steps%n", comm.rank(), comm.size(),
                    comm.provider(), loss[0], loss[loss.length - 1], loss.length);
            if (out[0] != null) {
                Files.createDirectories(out[0]);
                r.write(out[0].resolve("rank-" + comm.rank() + ".bin"));
            }
            // nobody tears down its end while a peer may still be finishing its last collective
            comm.barrier();
        }
    }

    /**
     * Trains for {@code config.steps()} steps. With {@code comm == null}: one process over the
     * whole global batch; otherwise this rank's shard, gradients averaged over {@code comm}.
     */
    public static TrainingResult train(Config config, Communicator comm) {
        int rank = comm == null ? 0 : comm.rank();
        int size = comm == null ? 1 : comm.size();
        if (config.globalBatch() % size != 0) {
            throw new IllegalArgumentException("global batch " + config.globalBatch() + " does not divide among "
                    + size + " ranks");
        }
        int shard = config.globalBatch() / size;
        SyntheticClassification data = new SyntheticClassification(config.seed(), config.features(), config.classes());
        Mlp model = new Mlp(config.features(), config.hidden(), config.classes(), shard, config.seed() + 1);
        List<Dense> layers = model.layersInBackwardOrder();
        if (comm != null) {
            // as DDP: rank 0's initial parameters win (here they are equal anyway, same seed)
            for (Dense layer : layers) {
                comm.broadcast(layer.parameters(), 0);
            }
        }
        float[] x = new float[shard * config.features()];
        int[] labels = new int[shard];
        float[] losses = new float[config.steps()];
        float[] lossBuf = new float[1];
        Duration timeout = comm == null ? Duration.ZERO : comm.options().timeout();
        try (GradientSync sync = comm == null ? GradientSync.none() : new DdpGradientSync(comm, layers, timeout)) {
            for (int step = 0; step < config.steps(); step++) {
                data.fill((long) step * config.globalBatch() + (long) rank * shard, shard, x, labels);
                lossBuf[0] = model.lossAndGradients(x, labels, shard, sync::layerReady);
                sync.finish();
                model.sgd(config.learningRate());
                if (comm != null) {
                    comm.allReduce(lossBuf, ReduceOp.AVG);
                }
                losses[step] = lossBuf[0];
            }
        }
        float[][] params = new float[layers.size()][];
        for (int i = 0; i < params.length; i++) {
            params[i] = layers.get(i).parameters().clone();
        }
        return new TrainingResult(params, losses);
    }
}
