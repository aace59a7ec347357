package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.Descriptor;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Staging;

/**
 * Ring allgather: every rank's block of {@code count} elements ends at {@code rank * count} of
 * every receive buffer. Blocks are received straight into the receive buffer and forwarded from
 * there. The caller places this rank's own block (a local copy when out of place).
 */
public final class RingAllGather extends RingCollective {

    public void prepare(Group g, Staging staging, CollectiveOptions o, Call c) {
        prepare(g, staging, o, c, c.identity);
    }

    public void prepare(Group g, Staging staging, CollectiveOptions o, Call c, Descriptor handshake) {
        setUp(g, staging, o, c, c.identity, handshake, RingPipeline.Mode.ALL_GATHER, c.count, 0);
    }
}
