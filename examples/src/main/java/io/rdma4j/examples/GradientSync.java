package io.rdma4j.examples;

/**
 * How a trainer turns each rank's gradient into the gradient it steps with: nothing to do in a
 * single process; an allreduce average in a data-parallel one.
 */
public interface GradientSync extends AutoCloseable {

    /** Layer {@code layer} (index in backward order) has its final local gradient. */
    void layerReady(int layer);

    /** Blocks until every layer's gradient is the synchronised one. */
    void finish();

    @Override
    void close();

    /** A single process: its gradient is already the global one. */
    static GradientSync none() {
        return new GradientSync() {
            @Override
            public void layerReady(int layer) {
            }

            @Override
            public void finish() {
            }

            @Override
            public void close() {
            }
        };
    }
}
