package io.rdma4j.examples.dl4j;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.dl4j.DataParallel;
import io.rdma4j.examples.FrameworkExample;
import io.rdma4j.examples.FrameworkExample.Options;
import io.rdma4j.examples.FrameworkExample.Shard;
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

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * A Deeplearning4j MLP trained data-parallel over rdma4j: each rank fits its shard of every
 * global batch of a synthetic classification problem, {@link DataParallel} averages the
 * gradients, and at the end rank 0 gathers every rank's parameter bits and compares them.
 *
 * <pre>
 * OMP_NUM_THREADS=1 bin/rdma4j launch --nproc-per-node 2 --classpath "examples/target/classes:examples/target/lib/*" \
 *     --java-opt --sun-misc-unsafe-memory-access=allow --main-class io.rdma4j.examples.dl4j.Dl4jDataParallelMlp
 * </pre>
 *
 * Options: see {@link FrameworkExample}. Exit status 1 when the ranks' parameters differ.
 */
public final class Dl4jDataParallelMlp {
    private Dl4jDataParallelMlp() {
    }

    public static void main(String[] args) {
        int status;
        try (Communicator comm = Communicator.fromEnvironment()) {
            Options o = Options.parse(args, comm.size());
            MultiLayerNetwork net = new MultiLayerNetwork(new NeuralNetConfiguration.Builder()
                    .seed(comm.rank()).updater(new Adam(1e-3)).list()   // rank 0's initial values win
                    .layer(new DenseLayer.Builder().nIn(o.features()).nOut(o.hidden()).activation(Activation.RELU).build())
                    .layer(new DenseLayer.Builder().nIn(o.hidden()).nOut(o.hidden()).activation(Activation.RELU).build())
                    .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(o.hidden()).nOut(o.classes())
                            .activation(Activation.SOFTMAX).build())
                    .build());
            net.init();
            try (DataParallel dp = DataParallel.attach(comm, net)) {
                dp.fit(shards(o, comm, 0, o.warmupSteps()));
                ExistingDataSetIterator timed = shards(o, comm, o.warmupSteps(), o.steps());
                long commStart = dp.communicationNanos();
                long start = System.nanoTime();
                dp.fit(timed);
                FrameworkExample.report(comm, o, net.numParams(), dp.zeroCopy() ? "zero-copy" : "staged",
                        System.nanoTime() - start, dp.communicationNanos() - commStart, net.score());
            }
            status = FrameworkExample.compareParameters(comm, bits(net.params()));
        }
        System.exit(status);
    }

    private static ExistingDataSetIterator shards(Options o, Communicator comm, int firstStep, int steps) {
        List<DataSet> list = new ArrayList<>();
        for (int s = firstStep; s < firstStep + steps; s++) {
            Shard shard = Shard.of(o, comm, s);
            int rows = shard.labels().length;
            INDArray labels = Nd4j.zeros(rows, o.classes());
            for (int i = 0; i < rows; i++) {
                labels.putScalar(i, shard.labels()[i], 1);
            }
            list.add(new DataSet(Nd4j.create(shard.x(), new long[] {rows, o.features()}, 'c'), labels));
        }
        return new ExistingDataSetIterator(list);
    }

    private static byte[] bits(INDArray params) {
        float[] values = params.toFloatVector();
        ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        return b.array();
    }
}
