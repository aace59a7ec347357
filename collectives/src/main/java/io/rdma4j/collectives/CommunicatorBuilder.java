package io.rdma4j.collectives;

import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.Store;

/**
 * Builds a world communicator from explicit parts ({@link Communicator#builder()}). The settings
 * not given are read from the process's RDMA4J_* environment, as {@link Communicator#fromEnvironment}
 * reads them: {@link #transportConfig} and {@link #options} (docs/configuration.md).
 */
public final class CommunicatorBuilder {
    int rank = -1;
    int size = -1;
    Store store;
    boolean ownsStore;
    Transport transport;
    Transport localTransport;
    TransportConfig transportConfig;
    CollectiveOptions options;
    AlgorithmPolicy policy = AlgorithmPolicy.defaults();
    String hostId;
    boolean autoLocal = true;
    boolean eagerConnect = true;

    CommunicatorBuilder() {
    }

    public CommunicatorBuilder rank(int rank) {
        this.rank = rank;
        return this;
    }

    public CommunicatorBuilder size(int size) {
        this.size = size;
        return this;
    }

    /**
     * The bootstrap store (also used for the fault board); not closed by the communicator.
     *
     * <p>A world is named by its size and by how many worlds of that size each rank built on the
     * store, so the ranks that share a store must build their worlds of one size in the same
     * order. Two groups that build worlds of one size at the same time (two disjoint halves of a
     * job, say, or two threads per rank) would pair up by rank number across the groups: give
     * each group its own {@code store.scoped(name)}. A {@link io.rdma4j.transport.bootstrap.FileStore}
     * keeps its keys after the job, so give every job a directory of its own.
     */
    public CommunicatorBuilder store(Store store) {
        return store(store, false);
    }

    CommunicatorBuilder store(Store store, boolean owned) {
        this.store = store;
        this.ownsStore = owned;
        return this;
    }

    /** An existing transport for the whole world (not closed by the communicator). */
    public CommunicatorBuilder transport(Transport transport) {
        this.transport = transport;
        return this;
    }

    /**
     * An existing shared-memory transport over this rank's host (ranks ordered as on
     * {@link Topology}); enables the two-hop allreduce. Not closed by the communicator.
     */
    public CommunicatorBuilder localTransport(Transport localTransport) {
        this.localTransport = localTransport;
        return this;
    }

    /**
     * Transport settings when the communicator creates its transport(s); without it, {@link
     * TransportConfig#fromEnvironment()}.
     */
    public CommunicatorBuilder transportConfig(TransportConfig config) {
        this.transportConfig = config;
        return this;
    }

    /** Timeouts, chunking and the rest of the collectives' settings; without it, {@link CollectiveOptions#fromEnvironment} of the process environment. */
    public CommunicatorBuilder options(CollectiveOptions options) {
        this.options = options;
        return this;
    }

    public CommunicatorBuilder policy(AlgorithmPolicy policy) {
        this.policy = policy;
        return this;
    }

    /** This rank's host identity (default: the host name); ranks with equal ids share a host. */
    public CommunicatorBuilder hostId(String hostId) {
        this.hostId = hostId;
        return this;
    }

    /** Whether to create a per-host shared-memory transport for two-hop (default true). */
    public CommunicatorBuilder autoLocalTransport(boolean enabled) {
        this.autoLocal = enabled;
        return this;
    }

    /**
     * Whether to open the connection to every peer while building (default true), so that
     * later collectives (and an abort) never wait inside a transport's connection set-up.
     */
    public CommunicatorBuilder eagerConnect(boolean enabled) {
        this.eagerConnect = enabled;
        return this;
    }

    public Communicator build() {
        if (transport != null) {
            if (rank < 0) {
                rank = transport.rank();
            }
            if (size < 0) {
                size = transport.size();
            }
            if (transport.rank() != rank || transport.size() != size) {
                throw new IllegalArgumentException("transport is rank " + transport.rank() + " of "
                        + transport.size() + " but the communicator was told rank " + rank + " of " + size);
            }
        }
        if (size < 1 || rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " outside a world of size " + size
                    + " (set rank/size, or RANK/WORLD_SIZE)");
        }
        if (transport == null && store == null) {
            throw new IllegalArgumentException("a communicator needs a store or a transport");
        }
        World world = Bootstrap.openWorld(this);
        try {
            return Communicator.world(world, rank);
        } catch (RuntimeException | Error e) {
            try {
                world.close(java.time.Duration.ZERO); // what it created, and its claim on the transport
            } catch (RuntimeException closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
    }
}
