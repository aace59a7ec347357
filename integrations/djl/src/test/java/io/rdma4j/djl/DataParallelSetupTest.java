package io.rdma4j.djl;

import ai.djl.Model;
import ai.djl.training.Trainer;
import io.rdma4j.collectives.Communicator;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Setup mistakes fail at once, in one process (a world of one rank). */
class DataParallelSetupTest {
    private static Communicator worldOfOne() {
        return Communicator.fromEnvironment(Map.of("RANK", "0", "WORLD_SIZE", "1", "MASTER_ADDR", "127.0.0.1",
                "MASTER_PORT", "0", "RDMA4J_TRANSPORT", "shm", "RDMA4J_JOB_TOKEN", "setup-test"));
    }

    @Test
    void aTrainerWithoutTheListenerIsRefusedAtInitialize() {
        try (Communicator comm = worldOfOne();
             DataParallel dp = new DataParallel(comm);
             Model model = TinyModels.model();
             Trainer trainer = TinyModels.trainer(model, "sgd")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> dp.initialize(trainer, TinyModels.inputShape(8)));
            assertTrue(e.getMessage().contains("addTrainingListeners"), e.getMessage());
        }
    }

    @Test
    void trainingWithoutInitializeIsRefusedAtTheFirstBatch() throws Exception {
        try (Communicator comm = worldOfOne();
             DataParallel dp = new DataParallel(comm);
             Model model = TinyModels.model();
             Trainer trainer = TinyModels.trainer(model, "sgd", dp);
             ai.djl.ndarray.NDManager data = ai.djl.ndarray.NDManager.newBaseManager()) {
            trainer.initialize(TinyModels.inputShape(8));
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> ai.djl.training.EasyTrain.fit(trainer, 1, TinyModels.shards(data, 1, 1, 0, 8), null));
            assertTrue(e.getMessage().contains("dataParallel.initialize"), e.getMessage());
        }
    }

    /**
     * Freezing a trained parameter after initialize, or unfreezing one frozen before it, is
     * refused at the next batch (unfrozen, it would train on this rank's gradient alone).
     */
    @Test
    void changingWhichParametersTrainAfterInitializeIsRefused() throws Exception {
        for (boolean frozenAtInitialize : new boolean[] {false, true}) {
            try (Communicator comm = worldOfOne();
                 DataParallel dp = new DataParallel(comm);
                 Model model = TinyModels.model();
                 Trainer trainer = TinyModels.trainer(model, "sgd", dp);
                 ai.djl.ndarray.NDManager data = ai.djl.ndarray.NDManager.newBaseManager()) {
                ai.djl.nn.Block first = model.getBlock().getChildren().get(0).getValue();
                first.freezeParameters(frozenAtInitialize);
                dp.initialize(trainer, TinyModels.inputShape(8));
                first.freezeParameters(!frozenAtInitialize);
                IllegalStateException e = assertThrows(IllegalStateException.class,
                        () -> ai.djl.training.EasyTrain.fit(trainer, 1, TinyModels.shards(data, 1, 1, 0, 8), null));
                assertTrue(e.getMessage().contains(frozenAtInitialize ? "was unfrozen" : "was frozen"), e.getMessage());
            }
        }
    }

    /**
     * After each step only what training changes on each rank apart is broadcast again: the
     * batch norm's running statistics, not the weights and bias of a layer frozen before
     * initialize (they do not change; a frozen backbone would cost more than the gradients).
     */
    @Test
    void frozenWeightsAreNotBroadcastAfterEveryStepRunningStatisticsAre() throws Exception {
        try (Communicator comm = worldOfOne();
             DataParallel dp = new DataParallel(comm);
             Model model = TinyModels.model(true);
             Trainer trainer = TinyModels.trainer(model, "sgd", dp)) {
            model.getBlock().getChildren().get(0).getValue().freezeParameters(true);
            dp.initialize(trainer, TinyModels.inputShape(8));
            java.util.List<String> running = new java.util.ArrayList<>();
            java.util.List<String> frozen = new java.util.ArrayList<>();
            for (var p : model.getBlock().getParameters()) {
                ai.djl.nn.Parameter.Type type = p.getValue().getType();
                if (type == ai.djl.nn.Parameter.Type.RUNNING_MEAN || type == ai.djl.nn.Parameter.Type.RUNNING_VAR) {
                    running.add(p.getValue().getName());
                } else if (!p.getValue().requiresGradient()) {
                    frozen.add(p.getValue().getName());
                }
            }
            assertEquals(2, running.size(), "the batch norm's running mean and variance");
            assertEquals(2, frozen.size(), "the first layer's weight and bias");
            java.util.List<String> each = dp.broadcastEachStep();
            assertTrue(each.containsAll(running) && each.size() == running.size(), each + " against " + running);
        }
    }

    /**
     * A trainable parameter the forward pass never uses has no gradient: refused at the batch,
     * naming it (DJL hands out a new zero tensor for it per call, whose memory the averaging
     * would have written into after it was freed).
     */
    @Test
    void aTrainableParameterWithoutAGradientIsRefusedNamingIt() throws Exception {
        try (Communicator comm = worldOfOne();
             DataParallel dp = new DataParallel(comm);
             Model model = Model.newInstance("unused-branch");
             ai.djl.ndarray.NDManager data = ai.djl.ndarray.NDManager.newBaseManager()) {
            model.setBlock(new UnusedBranch());
            try (Trainer trainer = TinyModels.trainer(model, "sgd", dp)) {
                dp.initialize(trainer, TinyModels.inputShape(8));
                IllegalStateException e = assertThrows(IllegalStateException.class,
                        () -> ai.djl.training.EasyTrain.fit(trainer, 1, TinyModels.shards(data, 1, 1, 0, 8), null));
                assertTrue(e.getMessage().contains("unused") && e.getMessage().contains("got no gradient"),
                        e.getMessage());
            }
        }
    }

    /** Two linear layers of which the forward pass uses the first only. */
    private static final class UnusedBranch extends ai.djl.nn.AbstractBlock {
        private final ai.djl.nn.Block used = addChildBlock("used",
                ai.djl.nn.core.Linear.builder().setUnits(TinyModels.CLASSES).build());
        private final ai.djl.nn.Block unused = addChildBlock("unused",
                ai.djl.nn.core.Linear.builder().setUnits(TinyModels.CLASSES).build());

        @Override
        protected ai.djl.ndarray.NDList forwardInternal(ai.djl.training.ParameterStore store,
                                                        ai.djl.ndarray.NDList inputs, boolean training,
                                                        ai.djl.util.PairList<String, Object> params) {
            return used.forward(store, inputs, training);
        }

        @Override
        public ai.djl.ndarray.types.Shape[] getOutputShapes(ai.djl.ndarray.types.Shape[] inputs) {
            return used.getOutputShapes(inputs);
        }

        @Override
        protected void initializeChildBlocks(ai.djl.ndarray.NDManager manager, ai.djl.ndarray.types.DataType type,
                                             ai.djl.ndarray.types.Shape... inputShapes) {
            used.initialize(manager, type, inputShapes);
            unused.initialize(manager, type, inputShapes);
        }
    }
}
