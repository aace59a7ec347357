package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Staging;

/**
 * Ring allreduce: reduce-scatter then allgather around the ring, chunked and pipelined
 * ({@link RingPipeline}), on one or more channels. Moves {@code 2(n-1)/n} of the data per rank,
 * which is optimal for bandwidth; latency grows as {@code 2(n-1)} hops. In and out of place; an
 * out-of-place call reduces from the send buffer straight into the receive buffer (no copy).
 */
public final class RingAllReduce extends RingCollective {

    public void prepare(Group g, Staging staging, CollectiveOptions o, Call c) {
        prepare(g, staging, o, c, c.identity);
    }

    /** With an explicit handshake descriptor (used by hierarchical algorithms for their hops). */
    public void prepare(Group g, Staging staging, CollectiveOptions o, Call c,
                        io.rdma4j.collectives.core.Descriptor handshake) {
        setUp(g, staging, o, c, c.identity, handshake, RingPipeline.Mode.ALL_REDUCE, c.count,
                c.reducer.needsFinish() ? c.contributors : 0);
    }
}
