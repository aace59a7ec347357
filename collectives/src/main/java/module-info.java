/**
 * {@code Communicator} and every collective ({@code io.rdma4j.collectives}); the algorithms, the
 * engine and the reduction kernels are internal. The Vector API is optional: with
 * {@code --add-modules jdk.incubator.vector} the reductions use SIMD kernels, without it scalar loops.
 */
module io.rdma4j.collectives {
    requires transitive io.rdma4j.transport;
    requires static jdk.incubator.vector;

    exports io.rdma4j.collectives;
}
