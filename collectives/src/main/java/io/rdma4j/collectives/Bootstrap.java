package io.rdma4j.collectives;

import io.rdma4j.collectives.algo.Hierarchy;
import io.rdma4j.collectives.core.CommState;
import io.rdma4j.collectives.core.Engine;
import io.rdma4j.collectives.core.FaultBoard;
import io.rdma4j.nativesupport.internal.OnlineCpus;
import io.rdma4j.transport.IdleStrategy;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportTimeoutException;
import io.rdma4j.transport.Transports;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.bootstrap.TcpStore;

import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * How a world comes up: the store from the environment's contract, the transport, the host
 * identities exchanged through the store (the topology), the per-host shared-memory transport
 * of the two-hop allreduce, the connections to every peer, and the engine.
 */
final class Bootstrap {
    /**
     * Per world size and rank: how many worlds of that size the rank built on the store. The
     * size and the count name a world ({@link World#id}); counted per size, so that a rank that
     * also joined worlds of another size (a subset of the job, say) agrees with the others.
     */
    private static final String GENERATION_KEY = "rdma4j/comm/generation/";
    /**
     * A counter per world id that a rank whose build of that world failed raises: a rank that
     * comes to the world later (it started after the others gave up waiting for it) moves on to
     * the next, where their retry meets it, instead of joining a world nobody builds any more.
     */
    private static final String ABANDONED_KEY = "rdma4j/comm/abandoned/";
    private static final String HOST_KEY = "rdma4j/comm/host/";
    /** Each rank's CPU affinity ({@code Cpus_allowed_list}), beside its host identity. */
    private static final String CPUS_KEY = "rdma4j/comm/cpus/";
    /** Where the transports a world creates keep their keys: under its id. */
    private static final String WORLD_KEY = "rdma4j/world/";
    /** In the agreed shape: no algorithm forced, the policy chooses. */
    private static final String NO_ALGORITHM = "-";
    private static final String PIPELINE_KEY = "rdma4j/comm/pipeline/";
    private static final System.Logger LOG = System.getLogger(Bootstrap.class.getName());

    private Bootstrap() {
    }

    /** The store {@code env} describes; its server runs in rank 0 unless RDMA4J_STORE_SERVER names the hosting ranks. */
    static Store store(Map<String, String> env) {
        TcpStore.Builder sb = TcpStore.builder().fromEnvironment(env);
        String storeServer = env.get(TcpStore.ENV_STORE_SERVER);
        if (storeServer == null || storeServer.isBlank()) { // blank is unset, as the store reads it
            sb.hostServer(EnvContract.rank(env) == 0);
        }
        return sb.build();
    }

    static Communicator fromEnvironment(Map<String, String> env, Store store, boolean ownsStore) {
        Communicator c = Communicator.builder().rank(EnvContract.rank(env)).size(EnvContract.size(env))
                .store(store, ownsStore)
                .transportConfig(TransportConfig.builder().fromEnvironment(env).build())
                .options(CollectiveOptions.fromEnvironment(env))
                .hostId(env.get("RDMA4J_HOST_ID"))
                .build();
        EnvContract.checkLocal(env, c.localRank(), c.localSize(), c.topology());
        return c;
    }

    /** Creates what the builder did not get, connects, and returns the world; closes what it created if that fails. */
    static World openWorld(CommunicatorBuilder b) {
        int rank = b.rank;
        int size = b.size;
        Store store = b.store;
        CollectiveOptions opts = b.options != null ? b.options : CollectiveOptions.fromEnvironment(System.getenv());
        TransportConfig tc = b.transportConfig != null ? b.transportConfig : TransportConfig.fromEnvironment();
        boolean ownsTransport = b.transport == null;
        if (!ownsTransport) {
            World.claim(b.transport); // a transport this build makes serves no other world
        }
        String id = null;
        Store worldStore;
        Transport t;
        try {
            id = store == null ? "local" : takeWorldId(store, size, rank);
            worldStore = store == null ? null : store.scoped(WORLD_KEY + id + "/");
            t = ownsTransport ? Transports.create(tc, worldStore, rank, size) : b.transport;
        } catch (RuntimeException | Error e) {
            if (!ownsTransport) {
                World.release(b.transport);
            }
            if (store != null && id != null) {
                abandon(store, id, rank, e);
            }
            throw e;
        }
        Transport local = b.localTransport;
        boolean ownsLocal = false;
        try {
            Topology topo = store == null ? Topology.singleHost(size)
                    : exchangeHosts(store, id, rank, size, b.hostId != null ? b.hostId : defaultHostId(), tc.timeout());
            boolean multiHost = topo.hosts() > 1 && topo.uniform() && topo.localSize(rank) > 1;
            if (local == null && b.autoLocal && multiHost && store != null
                    && !"shm".equals(t.provider())) {
                local = Transports.create(tc.toBuilder().provider(TransportConfig.Provider.SHM).build(),
                        worldStore.scoped("rdma4j/local/" + topo.hostOf(rank)), topo.localRank(rank), topo.localSize(rank));
                ownsLocal = true;
            }
            Hierarchy h = multiHost && local != null ? Hierarchy.of(t, local, topo, rank) : null;
            if (b.eagerConnect) {
                connectAll(t);
                if (local != null) {
                    connectAll(local);
                }
            }
            int localRanks = topo.localSize(rank);
            // Whether the host's ranks take turns on its CPUs: counted against the CPUs the
            // machine has online, since a rank bound to a CPU of its own sees only that one.
            boolean crowded = OnlineCpus.outnumberedBy(localRanks);
            CollectiveOptions effective = opts.forTransport(t.provider(), crowded);
            if (store != null && size > 1) {
                effective = agreePipeline(store, id, rank, effective, tc.timeout());
            }
            // A caller waiting for its own call may keep a CPU of its own busy; the progress thread
            // idles as the count of ranks alone says, without what the affinities add: it shares
            // its CPU with the computation it overlaps. Not over TCP, where every poll is a system
            // call on the socket the kernel delivers into: 2 bound ranks, 32 KiB allreduce, 24-32 us
            // polling on against 21-26 us yielding after the default spins (four passes taking turns).
            boolean ownCpus = store != null && !"tcp".equals(t.provider())
                    && localRanksOnOwnCpus(store, id, rank, topo, tc.timeout());
            IdleStrategy idle = tc.newIdleStrategy(localRanks, ownCpus);
            IdleStrategy background = tc.idleStrategy().newInstance(localRanks); // its warning, if any, was logged
            Engine engine = new Engine(effective, new FaultBoard(store), idle, background, crowded);
            return new World(engine, t, ownsTransport, store, b.ownsStore, id, local, ownsLocal, topo, h,
                    b.policy.forTransport(t.provider()));
        } catch (RuntimeException | Error e) {
            if (store != null) { // first: a rank coming now skips this world sooner
                abandon(store, id, rank, e);
            }
            World.release(t);
            if (ownsLocal) {
                local.close();
            }
            if (ownsTransport) {
                t.close();
            }
            throw e;
        }
    }

    /**
     * The id of this rank's next world on {@code store} (its n-th world of this size, so that
     * what an earlier world left there, its hosts, faults and transports' endpoints, is not read
     * as this one's), past those the other ranks abandoned.
     */
    private static String takeWorldId(Store store, int size, int rank) {
        while (true) {
            String id = size + "." + store.add(GENERATION_KEY + size + "/" + rank, 1);
            long abandoned;
            try {
                abandoned = store.add(ABANDONED_KEY + id, 0); // adding 0 reads the counter without waiting
            } catch (RuntimeException | Error e) { // this rank's count moved past the world: it gives it up
                abandon(store, id, rank, e);
                throw e;
            }
            if (abandoned == 0) {
                return id;
            }
        }
    }

    /**
     * Marks world {@code id} as given up, and says so on its fault board: a rank that read the
     * mark unset just before (it came as this one gave up) built the world and waits in its first
     * call, and the board ends that wait at the engine's next check instead of its timeout, naming
     * this rank. A store that fails here adds its reason to {@code cause}. An interrupt (a
     * cancelled build) is set aside for the mark, which a store's lock would otherwise refuse at
     * once, and set again.
     */
    static void abandon(Store store, String id, int rank, Throwable cause) {
        boolean interrupted = Thread.interrupted();
        try {
            store.add(ABANDONED_KEY + id, 1);
            new FaultBoard(store).post(CommState.world(id, rank).board(), new FaultBoard.Fault(
                    FaultBoard.FaultKind.RANK_FAILED, rank, rank, "rank " + rank + " gave up building this world ("
                    + cause + "); build the communicator again: the ranks that gave up build the next one"));
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Ascending peer order on every rank: each pair's two connection calls meet without cycles. */
    private static void connectAll(Transport t) {
        for (int p = 0; p < t.size(); p++) {
            if (p != t.rank()) {
                t.connection(p);
            }
        }
    }

    /** The first wait for every other rank: bounded by the transport's timeout (RDMA4J_TIMEOUT_MS), as connecting is. */
    private static Topology exchangeHosts(Store store, String worldId, int rank, int size, String id, Duration timeout) {
        // the affinity first: a rank that read this rank's host identity finds it set
        store.set(CPUS_KEY + worldId + "/" + rank, OnlineCpus.allowedList().getBytes(StandardCharsets.UTF_8));
        String key = HOST_KEY + worldId + "/";
        store.set(key + rank, id.getBytes(StandardCharsets.UTF_8));
        String[] ids = new String[size];
        for (int r = 0; r < size; r++) {
            ids[r] = r == rank ? id : new String(awaitRank(store, key + r, r, timeout, "its host identity"),
                    StandardCharsets.UTF_8);
        }
        return new Topology(ids);
    }

    /**
     * Whether the ranks of {@code rank}'s host are bound to CPUs none of the others may use
     * ({@link OnlineCpus#eachOnOwnCpus}), from the affinities they published with their host
     * identity. Only this world's ranks of this host identity count: other jobs on the machine,
     * and ranks the job gave other host identities on it, are not seen.
     */
    static boolean localRanksOnOwnCpus(Store store, String worldId, int rank, Topology topo, Duration timeout) {
        List<String> affinities = new ArrayList<>();
        for (int r : topo.ranksOfHost(topo.hostOf(rank))) {
            affinities.add(new String(awaitRank(store, CPUS_KEY + worldId + "/" + r, r, timeout, "its CPU affinity"),
                    StandardCharsets.UTF_8));
        }
        return OnlineCpus.eachOnOwnCpus(affinities);
    }

    /** {@code key}, which rank {@code r} sets when it builds its world; a timeout names that rank. */
    private static byte[] awaitRank(Store store, String key, int r, Duration timeout, String what) {
        try {
            return store.get(key, timeout);
        } catch (TransportTimeoutException e) {
            throw new TransportTimeoutException(r, "rank " + r + " did not publish " + what + " within "
                    + timeout.toMillis() + " ms while this world was built (not started, dead, or using another store"
                    + " or job): " + e.getMessage());
        }
    }

    /**
     * Rank 0's chunk size, window, channel count and forced algorithm, which every rank takes: a
     * receiver posts for chunks of its own size, and a call's descriptor names its algorithm, so
     * ranks that cut differently (different RDMA4J_CHUNK_BYTES, or TCP's default on hosts whose
     * ranks do and do not outnumber their CPUs) or force different algorithms (RDMA4J_ALGO set on
     * one host only) would fail their first such call, blaming a healthy peer. A rank whose own
     * differ says so in the log.
     */
    private static CollectiveOptions agreePipeline(Store store, String worldId, int rank, CollectiveOptions mine,
                                                   Duration timeout) {
        String key = PIPELINE_KEY + worldId;
        if (rank == 0) {
            String algorithm = mine.algorithm() == null ? NO_ALGORITHM : mine.algorithm().name();
            store.set(key, (mine.chunkBytes() + "," + mine.window() + "," + mine.channels() + "," + algorithm)
                    .getBytes(StandardCharsets.US_ASCII));
            return mine;
        }
        String[] shape = new String(awaitRank(store, key, 0, timeout, "its pipeline shape"), StandardCharsets.US_ASCII)
                .split(",");
        CollectiveOptions agreed = mine.withChunkBytes(Integer.parseInt(shape[0])).withWindow(Integer.parseInt(shape[1]))
                .withChannels(Integer.parseInt(shape[2]))
                .withAlgorithm(shape.length < 4 || shape[3].equals(NO_ALGORITHM) ? null : Algorithm.valueOf(shape[3]));
        if (!agreed.equals(mine)) {
            LOG.log(System.Logger.Level.WARNING, "rank " + rank + " pipelines as rank 0 does (" + shapeOf(agreed)
                    + "), not with its own options (" + shapeOf(mine) + "): every rank of a communicator must cut its"
                    + " messages alike and run the same algorithm");
        }
        return agreed;
    }

    private static String shapeOf(CollectiveOptions o) {
        return "chunk " + o.chunkBytes() + " bytes, window " + o.window() + ", channels " + o.channels() + ", algorithm "
                + (o.algorithm() == null ? "the policy's choice" : o.algorithm().name().toLowerCase(java.util.Locale.ROOT));
    }

    private static String defaultHostId() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            return "localhost";
        }
    }
}
