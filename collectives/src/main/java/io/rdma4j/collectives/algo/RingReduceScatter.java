package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.Descriptor;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Staging;

/**
 * Ring reduce-scatter: the send buffer holds {@code size} blocks of {@code count} elements; rank
 * r ends with the reduction of everybody's block r in its receive buffer. Partial sums are
 * forwarded from staging, so neither the send buffer nor the rest of the receive buffer is
 * written.
 */
public final class RingReduceScatter extends RingCollective {

    public void prepare(Group g, Staging staging, CollectiveOptions o, Call c) {
        prepare(g, staging, o, c, c.identity, c.reducer.needsFinish() ? c.contributors : 0);
    }

    /** @param finishN divisor applied to the final block (AVG), 0 for none */
    public void prepare(Group g, Staging staging, CollectiveOptions o, Call c, Descriptor handshake, int finishN) {
        setUp(g, staging, o, c, c.identity, handshake, RingPipeline.Mode.REDUCE_SCATTER, c.count, finishN);
    }
}
