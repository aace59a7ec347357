package io.rdma4j.djl;

import ai.djl.Model;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;

import java.util.List;

/**
 * The single-process run the data-parallel ranks must reproduce, built without rdma4j: one model
 * (rank 0's seed) computes each global batch's gradient shard by shard, as EasyTrain does for one
 * batch (forward with the labels, the loss, backward), adds the shards' gradients in rank order,
 * divides by {@code ranks} and steps: gradient accumulation over the same global batches.
 */
final class GradientAccumulationReference {
    private GradientAccumulationReference() {
    }

    static byte[] train(String optimizer, int steps, int ranks, int rows) {
        try (Model model = TinyModels.model();
             Trainer trainer = TinyModels.trainer(model, optimizer);
             NDManager data = NDManager.newBaseManager()) {
            TinyModels.seed(1000);
            trainer.initialize(TinyModels.inputShape(rows));
            List<Parameter> params = TinyModels.parameters(model);
            for (int s = 0; s < steps; s++) {
                NDArray[][] shardGradients = new NDArray[ranks][];
                for (int r = 0; r < ranks; r++) {
                    NDArray[] xy = TinyModels.shard(data, s, ranks, r, rows);
                    try (GradientCollector collector = trainer.newGradientCollector()) {
                        NDList predictions = trainer.forward(new NDList(xy[0]), new NDList(xy[1]));
                        collector.backward(trainer.getLoss().evaluate(new NDList(xy[1]), predictions));
                    }
                    shardGradients[r] = new NDArray[params.size()];
                    for (int i = 0; i < params.size(); i++) {
                        NDArray g = params.get(i).getArray().getGradient();
                        shardGradients[r][i] = g.duplicate();
                        g.subi(g);
                    }
                }
                for (int i = 0; i < params.size(); i++) {
                    NDArray g = params.get(i).getArray().getGradient();
                    for (int r = 0; r < ranks; r++) {
                        g.addi(shardGradients[r][i]);
                    }
                    g.divi(ranks);
                }
                trainer.step();
            }
            return TinyModels.parameterBits(model);
        }
    }
}
