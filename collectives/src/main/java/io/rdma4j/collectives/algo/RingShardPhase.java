package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.Descriptor;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Staging;

/**
 * One half of a ring allreduce over a vector, for hierarchical algorithms: the reduce-scatter
 * half (rank r ends with shard r of the vector fully reduced in the receive buffer, in place
 * where an allreduce would have it) or the allgather half (shard r, read from the receive
 * buffer, is spread to every rank).
 */
public final class RingShardPhase extends RingCollective {

    public void prepareReduceScatter(Group g, Staging staging, CollectiveOptions o, Call c, Descriptor handshake) {
        setUp(g, staging, o, c, c.identity, handshake, RingPipeline.Mode.VECTOR_REDUCE_SCATTER, c.count, 0);
    }

    /** The call's send buffer must be its receive buffer (shard r is read from there). */
    public void prepareAllGather(Group g, Staging staging, CollectiveOptions o, Call c, Descriptor handshake) {
        setUp(g, staging, o, c, c.identity, handshake, RingPipeline.Mode.VECTOR_ALL_GATHER, c.count, 0);
    }
}
