/**
 * The transport contract ({@code io.rdma4j.transport}) and the bootstrap stores with their SPI
 * ({@code io.rdma4j.transport.bootstrap}); the verbs, shared-memory and TCP providers and the
 * shared request machinery are internal.
 */
module io.rdma4j.transport {
    requires transitive io.rdma4j.verbs;

    exports io.rdma4j.transport;
    exports io.rdma4j.transport.bootstrap;
}
