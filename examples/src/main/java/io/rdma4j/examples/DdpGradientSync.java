package io.rdma4j.examples;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.GradientBucketer;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.examples.mlp.Dense;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Data-parallel gradient averaging as PyTorch DDP does it: the layers' gradient buffers are
 * registered once with a {@link GradientBucketer}, one bucket per layer, in backward order; when
 * the backward pass finishes a layer, that layer's allreduce (average) starts on the
 * communicator's progress thread while the backward pass computes the next layer's gradient.
 */
public final class DdpGradientSync implements GradientSync {
    private final GradientBucketer bucketer;
    private final Duration timeout;

    /** @param layersInBackwardOrder the model's layers, the one whose gradient is final first */
    public DdpGradientSync(Communicator comm, List<Dense> layersInBackwardOrder, Duration timeout) {
        List<MemorySegment> grads = new ArrayList<>();
        long smallest = Long.MAX_VALUE;
        for (Dense layer : layersInBackwardOrder) {
            MemorySegment g = MemorySegment.ofArray(layer.gradients());
            grads.add(g);
            smallest = Math.min(smallest, g.byteSize());
        }
        // buckets no larger than the smallest layer: no two layers share one, so each layer's
        // allreduce starts as soon as that layer is done (a real model would use ~25 MiB buckets)
        this.bucketer = new GradientBucketer(comm, DataType.F32, grads, smallest, ReduceOp.AVG);
        this.timeout = timeout;
        if (bucketer.bucketCount() != grads.size()) {
            bucketer.close();
            throw new IllegalStateException("expected one bucket per layer, got " + bucketer.bucketCount());
        }
    }

    @Override
    public void layerReady(int layer) {
        bucketer.markReady(layer);
    }

    @Override
    public void finish() {
        bucketer.finish(timeout);
    }

    @Override
    public void close() {
        bucketer.close();
    }
}
