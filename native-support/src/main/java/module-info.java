/**
 * What rdma4j's native bindings share: the lifetime base of native handles (exported) and the
 * argument checks, the libc binding and what Linux says about the machine's CPUs (for rdma4j's
 * own modules only).
 */
module io.rdma4j.nativesupport {
    exports io.rdma4j.nativesupport;
    exports io.rdma4j.nativesupport.internal to io.rdma4j.verbs, io.rdma4j.cuda, io.rdma4j.transport,
            io.rdma4j.collectives;
}
