package io.rdma4j.djl;

import ai.djl.Model;
import ai.djl.training.Trainer;
import io.rdma4j.collectives.Communicator;
import org.junit.jupiter.api.Test;

import java.util.Map;

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
}
