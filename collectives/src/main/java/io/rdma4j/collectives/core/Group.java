package io.rdma4j.collectives.core;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.Transport;

/**
 * The members of one communicator (or of one hop of a hierarchical algorithm) on one transport:
 * group rank to transport rank to world rank, plus the communicator's context id, which forms
 * the high half of every tag so that communicators sharing a transport's connections never
 * match each other's messages. Tag = {@code ctx << 16 | lane}.
 */
public final class Group {
    /** Lane of the descriptor handshake. */
    public static final int LANE_CONTROL = 0;
    /** First data lane; algorithms use {@code LANE_DATA + channel}. */
    public static final int LANE_DATA = 1;
    /** Point-to-point lanes, apart from collectives' lanes. */
    public static final int LANE_P2P_CONTROL = 0xFFFE;
    public static final int LANE_P2P_DATA = 0xFFFF;
    public static final int MAX_CTX = 0x7FFF;

    private final Transport transport;
    private final int rank;
    private final int[] transportRanks;
    private final int[] worldRanks;
    private final int ctx;
    private final Connection[] connections;

    /**
     * @param transportRanks transport rank of each group rank
     * @param worldRanks     world (communicator-visible) rank of each group rank, for messages
     */
    public Group(Transport transport, int rank, int[] transportRanks, int[] worldRanks, int ctx) {
        if (ctx < 0 || ctx > MAX_CTX) {
            throw new IllegalArgumentException("context id " + ctx + " outside 0.." + MAX_CTX);
        }
        if (rank < 0 || rank >= transportRanks.length || transportRanks.length != worldRanks.length) {
            throw new IllegalArgumentException("rank " + rank + " outside group of " + transportRanks.length);
        }
        if (transportRanks[rank] != transport.rank()) {
            throw new IllegalArgumentException("group rank " + rank + " maps to transport rank " + transportRanks[rank]
                    + " but this process is transport rank " + transport.rank());
        }
        this.transport = transport;
        this.rank = rank;
        this.transportRanks = transportRanks.clone();
        this.worldRanks = worldRanks.clone();
        this.ctx = ctx;
        this.connections = new Connection[transportRanks.length];
    }

    public Transport transport() {
        return transport;
    }

    public int rank() {
        return rank;
    }

    public int size() {
        return transportRanks.length;
    }

    public int ctx() {
        return ctx;
    }

    public int tag(int lane) {
        return ctx << 16 | lane;
    }

    /** The connection to group rank {@code peer}, opened on first use. */
    public Connection connection(int peer) {
        Connection c = connections[peer];
        if (c == null) {
            c = transport.connection(transportRanks[peer]);
            connections[peer] = c;
        }
        return c;
    }

    public int worldRank(int groupRank) {
        return worldRanks[groupRank];
    }

    public int[] worldRanks() {
        return worldRanks.clone();
    }

    public int transportRank(int groupRank) {
        return transportRanks[groupRank];
    }

    /** The group rank of a transport rank, or -1 if it is not a member. */
    public int groupRankOfTransportRank(int transportRank) {
        for (int i = 0; i < transportRanks.length; i++) {
            if (transportRanks[i] == transportRank) {
                return i;
            }
        }
        return -1;
    }
}
