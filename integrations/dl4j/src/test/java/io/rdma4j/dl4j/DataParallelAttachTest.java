package io.rdma4j.dl4j;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import org.deeplearning4j.datasets.iterator.ExistingDataSetIterator;
import io.rdma4j.collectives.UnevenDataException;
import org.deeplearning4j.nn.api.OptimizationAlgorithm;
import org.deeplearning4j.nn.conf.BackpropType;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.LSTM;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.optimize.listeners.ScoreIterationListener;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Sgd;
import org.nd4j.linalg.lossfunctions.LossFunctions;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What attaching promises about the network's arrays, in a one-rank world in this JVM. */
class DataParallelAttachTest {

    /** What a test does with a freshly built MLP attached in a world of one rank. */
    private interface Attached {
        void run(MultiLayerNetwork net, DataParallel dp);
    }

    private static void withAttached(Attached body) {
        try (LocalGroup g = LocalGroup.start(1, LocalGroup.config(TransportConfig.Provider.TCP));
             Communicator comm = Communicator.builder().transport(g.transport(0)).store(g.store(0))
                     .options(CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(10))).build()) {
            MultiLayerNetwork net = (MultiLayerNetwork) TinyNetworks.build("mlp", DataType.FLOAT, "sgd", 1);
            try (DataParallel dp = DataParallel.attach(comm, net)) {
                body.run(net, dp);
            }
        }
    }

    /** A line-search optimizer steps by each rank's own score: refused before anything is sent. */
    @Test
    void anOptimizerWithALineSearchIsRefused() {
        try (LocalGroup g = LocalGroup.start(1, LocalGroup.config(TransportConfig.Provider.TCP));
             Communicator comm = Communicator.builder().transport(g.transport(0)).store(g.store(0))
                     .options(CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(10))).build()) {
            MultiLayerNetwork net = (MultiLayerNetwork) TinyNetworks.build("mlp", DataType.FLOAT, "sgd", 1);
            net.conf().setOptimizationAlgo(OptimizationAlgorithm.LBFGS);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DataParallel.attach(comm, net));
            assertTrue(e.getMessage().contains("LBFGS is not data-parallel"), e.getMessage());
            assertTrue(net.getListeners() == null || net.getListeners().isEmpty(), "nothing attached");
        }
    }

    /**
     * Under truncated BPTT a batch is one gradient allreduce per segment: ranks whose sequences
     * cut into different numbers of segments are told so on every rank, before any steps.
     */
    @Test
    void truncatedBpttBatchesOfDifferentSegmentCountsAreUnevenDataOnEveryRank() throws Exception {
        int[] timeSteps = {8, 12}; // segments of 4: two on rank 0, three on rank 1
        RuntimeException[] failures = new RuntimeException[2];
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(Duration.ofSeconds(60), (rank, transport, store) -> {
                try (Communicator comm = Communicator.builder().transport(transport).store(store)
                        .options(CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(20))).build()) {
                    MultiLayerNetwork net = new MultiLayerNetwork(new NeuralNetConfiguration.Builder().seed(1)
                            .dataType(DataType.FLOAT).updater(new Sgd(0.1)).list()
                            .layer(new LSTM.Builder().nIn(3).nOut(4).activation(Activation.TANH).build())
                            .layer(new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE).nIn(4).nOut(2)
                                    .activation(Activation.IDENTITY).build())
                            .backpropType(BackpropType.TruncatedBPTT).tBPTTLength(4).build());
                    net.init();
                    int t = timeSteps[rank];
                    var batch = new org.nd4j.linalg.dataset.DataSet(Nd4j.rand(DataType.FLOAT, 2, 3, t),
                            Nd4j.rand(DataType.FLOAT, 2, 2, t));
                    try (DataParallel dp = DataParallel.attach(comm, net)) {
                        failures[rank] = assertThrows(UnevenDataException.class,
                                () -> dp.fit(new ExistingDataSetIterator(List.of(batch))));
                        assertEquals(0, dp.steps());
                    }
                }
            });
        }
        for (RuntimeException e : failures) {
            assertTrue(e.getMessage().contains("different numbers of gradient passes")
                    && e.getMessage().contains("rank 0: 2, rank 1: 3"), e.getMessage());
        }
    }

    private static ExistingDataSetIterator oneBatch(int step) {
        return new ExistingDataSetIterator(List.of(TinyNetworks.globalBatch(step, 8, DataType.FLOAT)));
    }

    /**
     * A network that gets a new gradient array after attaching (initGradientsView again) would
     * train on gradients nobody averages while the attached array is averaged: refused instead.
     */
    @Test
    void aGradientArrayTheNetworkReplacedIsRefusedNotLeftUnaveraged() {
        withAttached((net, dp) -> {
            net.fit(TinyNetworks.globalBatch(0, 8, DataType.FLOAT)); // the attached array: fine
            net.initGradientsView();
            RuntimeException e = assertThrows(RuntimeException.class,
                    () -> net.fit(TinyNetworks.globalBatch(1, 8, DataType.FLOAT)));
            String all = e + " " + e.getCause();
            assertTrue(all.contains("gradients array was replaced"), all);
        });
    }

    /**
     * {@code setListeners} after attaching removes the averaging listener: fit refuses to train
     * unaveraged; listeners added with {@code addListeners} keep it.
     */
    @Test
    void listenersReplacedAfterAttachingAreRefusedNotTrainedApart() {
        withAttached((net, dp) -> {
            net.addListeners(new ScoreIterationListener(1));
            dp.fit(oneBatch(0));
            assertEquals(1, dp.steps());
            net.setListeners(new ScoreIterationListener(1));
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> dp.fit(oneBatch(1)));
            assertTrue(e.getMessage().contains("setListeners"), e.getMessage());
            assertEquals(1, dp.steps());
        });
    }

    /** Several epochs over an iterator that cannot reset are refused, as the network's own fit refuses them. */
    @Test
    void severalEpochsOverAnIteratorThatCannotResetAreRefused() {
        withAttached((net, dp) -> {
            ExistingDataSetIterator once = new ExistingDataSetIterator(
                    List.of(TinyNetworks.globalBatch(0, 8, DataType.FLOAT)).iterator());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> dp.fit(once, 3));
            assertTrue(e.getMessage().contains("reset"), e.getMessage());
            dp.fit(once, 1);
            assertEquals(1, dp.steps());
        });
    }

    /**
     * fit makes the epoch's listener calls as the network's own fit does: onEpochStart and
     * onEpochEnd once per epoch, the end before the epoch count moves on.
     */
    @Test
    void fitCallsTheEpochListenersOncePerEpoch() {
        List<String> calls = new java.util.ArrayList<>();
        withAttached((net, dp) -> {
            net.addListeners(new org.deeplearning4j.optimize.api.BaseTrainingListener() {
                @Override
                public void onEpochStart(org.deeplearning4j.nn.api.Model model) {
                    calls.add("start " + net.getEpochCount());
                }

                @Override
                public void onEpochEnd(org.deeplearning4j.nn.api.Model model) {
                    calls.add("end " + net.getEpochCount());
                }
            });
            dp.fit(oneBatch(0), 2);
        });
        assertEquals(List.of("start 0", "end 0", "start 1", "end 1"), calls);
    }
}
