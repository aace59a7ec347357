package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.Topology;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.transport.Transport;

/**
 * The two groups of the two-hop allreduce for one rank: its host's ranks over the local
 * (shared-memory) transport, and the ranks with the same local rank on every host over the
 * network transport (context id 1, apart from the world's 0).
 */
public final class Hierarchy {
    public static final int CROSS_CTX = 1;

    private final Group local;
    private final Group cross;

    private Hierarchy(Group local, Group cross) {
        this.local = local;
        this.cross = cross;
    }

    public static Hierarchy of(Transport network, Transport localTransport, Topology topo, int worldRank) {
        int host = topo.hostOf(worldRank);
        int lr = topo.localRank(worldRank);
        int[] hostRanks = topo.ranksOfHost(host);
        if (localTransport.size() != hostRanks.length || localTransport.rank() != lr) {
            throw new IllegalArgumentException("local transport is rank " + localTransport.rank() + " of "
                    + localTransport.size() + " but this host has " + hostRanks.length + " ranks and this is local rank " + lr);
        }
        int[] localTr = new int[hostRanks.length];
        for (int i = 0; i < localTr.length; i++) {
            localTr[i] = i;
        }
        Group local = new Group(localTransport, lr, localTr, hostRanks, 0);
        int[] crossRanks = new int[topo.hosts()];
        for (int h = 0; h < crossRanks.length; h++) {
            crossRanks[h] = topo.ranksOfHost(h)[lr];
        }
        Group cross = new Group(network, host, crossRanks, crossRanks, CROSS_CTX);
        return new Hierarchy(local, cross);
    }

    public Group local() {
        return local;
    }

    public Group cross() {
        return cross;
    }
}
