package io.rdma4j.dl4j;

import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.optimize.api.BaseTrainingListener;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;

/**
 * The single-process run the data-parallel ranks must reproduce, built without rdma4j: one
 * network (rank 0's seed) fits each global batch as {@code ranks} shards whose gradients it adds
 * in rank order and divides by {@code ranks} before its updater steps, i.e. gradient
 * accumulation over the same global batches.
 */
final class GradientAccumulationReference {
    private GradientAccumulationReference() {
    }

    static byte[] train(String kind, DataType type, String updater, int steps, int ranks, int rows) {
        Model model = TinyNetworks.build(kind, type, updater, 1000);
        INDArray[] others = new INDArray[ranks - 1];
        model.addListeners(new BaseTrainingListener() {
            @Override
            public void onGradientCalculation(Model m) {
                INDArray g = m.getGradientsViewArray();
                for (INDArray other : others) {
                    g.addi(other);
                }
                g.divi(ranks);
            }
        });
        for (int s = 0; s < steps; s++) {
            DataSet global = TinyNetworks.globalBatch(s, ranks * rows, type);
            for (int r = 1; r < ranks; r++) {
                others[r - 1] = gradientOf(model, TinyNetworks.shard(global, r, rows));
            }
            DataSet mine = TinyNetworks.shard(global, 0, rows);
            if (model instanceof MultiLayerNetwork n) {
                n.fit(mine);
            } else {
                ((ComputationGraph) model).fit(mine);
            }
        }
        return TinyNetworks.parameterBits(model);
    }

    private static INDArray gradientOf(Model model, DataSet shard) {
        if (model instanceof MultiLayerNetwork n) {
            n.setInput(shard.getFeatures());
            n.setLabels(shard.getLabels());
            n.computeGradientAndScore();
        } else {
            ComputationGraph g = (ComputationGraph) model;
            g.setInputs(shard.getFeatures());
            g.setLabels(shard.getLabels());
            g.computeGradientAndScore();
        }
        return model.getGradientsViewArray().dup();
    }
}
