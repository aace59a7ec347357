package io.rdma4j.collectives;

import io.rdma4j.collectives.algo.Algorithms;
import io.rdma4j.collectives.algo.Hierarchy;
import io.rdma4j.collectives.algo.SharedWindowAllReduce;
import io.rdma4j.collectives.core.Binder;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveKind;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.CommState;
import io.rdma4j.collectives.core.Engine;
import io.rdma4j.collectives.core.FaultBoard;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.reduce.Reducer;
import io.rdma4j.transport.IdleStrategy;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.SharedWindow;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.Transports;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.bootstrap.TcpStore;

import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * A group of ranks that run collectives together: the API a training framework calls.
 *
 * <p><b>Creation.</b> {@link #fromEnvironment()} reads the {@code env://} contract
 * (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, RDMA4J_JOB_TOKEN;
 * or Open MPI's OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE; or PMI_RANK/PMI_SIZE), starts
 * the bootstrap store and the transport chosen by {@link TransportConfig} (RDMA4J_TRANSPORT).
 * {@link #builder()} takes an explicit store and/or transport. Ranks exchange host identities
 * (host name, or RDMA4J_HOST_ID) through the store; when ranks span several hosts with the same
 * number of ranks each and the main transport is not shared memory, a shared-memory transport
 * is also created per host for the two-hop allreduce.
 *
 * <p><b>Semantics.</b> Every rank must issue the same collectives in the same order (as with
 * NCCL/MPI). Buffers are {@link MemorySegment}s, native (zero-copy: registered with the
 * transport, the registration cached) or heap (copied through registered scratch). Counts follow
 * NCCL: reduce-scatter's count is what each rank receives, allgather's what each rank sends,
 * all-to-all's what goes to each peer. A call is in place when send and receive are the same
 * segment (reduce-scatter: receive is block {@code rank} of send; allgather: send is block
 * {@code rank} of receive). Synchronous calls run on the caller's thread; {@code *Async} calls
 * return a {@link Work} and run on the communicator's worker thread; all of them, synchronous or
 * not, execute and complete in issue order. Collectives of communicators that share a transport
 * (a world and its splits) execute one at a time.
 *
 * <p><b>Faults.</b> A collective that fails (dead or unresponsive peer, mismatched call,
 * abort, timeout) throws a {@link CollectiveException} naming the rank to blame, on every rank
 * (through the fault board in the store), and breaks the communicator: later calls throw the same
 * cause. {@link #abort()} unblocks every pending call of this communicator (and, for a world
 * communicator, its transport) and tells the other ranks.
 */
public final class Communicator implements AutoCloseable {

    /** What a world communicator and its splits share. */
    private static final class Shared {
        final Engine engine;
        final Transport transport;
        final Store store;
        final Transport localTransport;
        final Topology topology;
        final Hierarchy hierarchy;
        final boolean ownsTransport;
        final boolean ownsStore;
        final boolean ownsLocal;
        final AlgorithmPolicy policy;
        long nextCtx = 2; // 0: world, 1: the two-hop cross-host group

        Shared(Engine engine, Transport transport, Store store, Transport localTransport, Topology topology,
               Hierarchy hierarchy, boolean ownsTransport, boolean ownsStore, boolean ownsLocal, AlgorithmPolicy policy) {
            this.engine = engine;
            this.transport = transport;
            this.store = store;
            this.localTransport = localTransport;
            this.topology = topology;
            this.hierarchy = hierarchy;
            this.ownsTransport = ownsTransport;
            this.ownsStore = ownsStore;
            this.ownsLocal = ownsLocal;
            this.policy = policy;
        }
    }

    private final Shared shared;
    private final Communicator world;
    private final Group group;
    private final CommState state;
    private final int[] members;
    private final Algorithms algos;
    private final Call call = new Call();
    private final Binder binder;
    /** The allreduce through shared windows; null unless a world communicator on shm. */
    private final SharedWindowAllReduce windowAllReduce;
    private final Object issueLock = new Object();
    private final long[] p2pSendSeq;
    private final long[] p2pRecvSeq;
    private ExecutorService worker;
    private CompletableFuture<Void> tail = CompletableFuture.completedFuture(null);
    private volatile boolean closed;

    private Communicator(Shared shared, Communicator world, Group group, CommState state) {
        this.shared = shared;
        this.world = world == null ? this : world;
        this.group = group;
        this.state = state;
        this.members = group.worldRanks();
        this.algos = new Algorithms(shared.policy);
        this.binder = new Binder(shared.transport, shared.engine.staging(shared.transport));
        // splits share the transport (and so its one window) but run their own call sequence
        SharedWindow w = world == null && group.size() > 1 ? shared.transport.sharedWindow() : null;
        this.windowAllReduce = w == null ? null : new SharedWindowAllReduce(w, group, shared.engine.sleepingWaits());
        this.p2pSendSeq = new long[group.size()];
        this.p2pRecvSeq = new long[group.size()];
    }

    // ---- creation --------------------------------------------------------------------------

    /** A world communicator from the process environment (see the class description). */
    public static Communicator fromEnvironment() {
        return fromEnvironment(System.getenv());
    }

    /** A world communicator from {@code env} (see the class description). */
    public static Communicator fromEnvironment(Map<String, String> env) {
        Store store = bootstrapStore(env);
        try {
            return fromEnvironment(env, store, true);
        } catch (RuntimeException | Error e) {
            store.close();
            throw e;
        }
    }

    /**
     * A world communicator from {@code env} over {@code store} (from {@link #bootstrapStore}),
     * which the caller keeps and closes after the communicator: for a program that exchanges data
     * of its own through the job's store too.
     */
    public static Communicator fromEnvironment(Map<String, String> env, Store store) {
        return fromEnvironment(env, store, false);
    }

    /**
     * The bootstrap store that {@code env} describes (see the class description); its server runs
     * in rank 0 unless {@code RDMA4J_STORE_SERVER} names the ranks that host one.
     */
    public static Store bootstrapStore(Map<String, String> env) {
        TcpStore.Builder sb = TcpStore.builder().fromEnvironment(env);
        if (env.get(TcpStore.ENV_STORE_SERVER) == null) {
            sb.hostServer(EnvContract.rank(env) == 0);
        }
        return sb.build();
    }

    private static Communicator fromEnvironment(Map<String, String> env, Store store, boolean ownsStore) {
        Communicator c = builder().rank(EnvContract.rank(env)).size(EnvContract.size(env)).store(store, ownsStore)
                .transportConfig(TransportConfig.builder().fromEnvironment(env).build())
                .options(CollectiveOptions.fromEnv(env))
                .hostId(env.get("RDMA4J_HOST_ID"))
                .build();
        EnvContract.checkLocal(env, c.localRank(), c.localSize(), c.topology());
        return c;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Builds a world communicator from explicit parts. */
    public static final class Builder {
        private int rank = -1;
        private int size = -1;
        private Store store;
        private boolean ownsStore;
        private Transport transport;
        private Transport localTransport;
        private TransportConfig transportConfig;
        private CollectiveOptions options;
        private AlgorithmPolicy policy = AlgorithmPolicy.defaults();
        private String hostId;
        private boolean autoLocal = true;
        private boolean eagerConnect = true;

        private Builder() {
        }

        public Builder rank(int rank) {
            this.rank = rank;
            return this;
        }

        public Builder size(int size) {
            this.size = size;
            return this;
        }

        /** The bootstrap store (also used for the fault board); not closed by the communicator. */
        public Builder store(Store store) {
            return store(store, false);
        }

        Builder store(Store store, boolean owned) {
            this.store = store;
            this.ownsStore = owned;
            return this;
        }

        /** An existing transport for the whole world (not closed by the communicator). */
        public Builder transport(Transport transport) {
            this.transport = transport;
            return this;
        }

        /**
         * An existing shared-memory transport over this rank's host (ranks ordered as on
         * {@link Topology}); enables the two-hop allreduce. Not closed by the communicator.
         */
        public Builder localTransport(Transport localTransport) {
            this.localTransport = localTransport;
            return this;
        }

        /** Transport settings when the communicator creates its transport(s). */
        public Builder transportConfig(TransportConfig config) {
            this.transportConfig = config;
            return this;
        }

        public Builder options(CollectiveOptions options) {
            this.options = options;
            return this;
        }

        public Builder policy(AlgorithmPolicy policy) {
            this.policy = policy;
            return this;
        }

        /** This rank's host identity (default: the host name); ranks with equal ids share a host. */
        public Builder hostId(String hostId) {
            this.hostId = hostId;
            return this;
        }

        /** Whether to create a per-host shared-memory transport for two-hop (default true). */
        public Builder autoLocalTransport(boolean enabled) {
            this.autoLocal = enabled;
            return this;
        }

        /**
         * Whether to open the connection to every peer while building (default true), so that
         * later collectives (and an abort) never wait inside a transport's connection set-up.
         */
        public Builder eagerConnect(boolean enabled) {
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
            CollectiveOptions opts = options != null ? options : CollectiveOptions.fromEnv(System.getenv());
            TransportConfig tc = transportConfig != null ? transportConfig : TransportConfig.fromEnvironment();
            boolean ownsTransport = transport == null;
            Transport t = transport != null ? transport : Transports.create(tc, store, rank, size);
            Transport local = localTransport;
            boolean ownsLocal = false;
            try {
                Topology topo = store == null ? Topology.singleHost(size) : exchangeHosts(store, rank, size,
                        hostId != null ? hostId : defaultHostId());
                boolean multiHost = topo.hosts() > 1 && topo.uniform() && topo.localSize(rank) > 1;
                if (local == null && autoLocal && multiHost && store != null && !"shm".equals(t.provider())) {
                    local = Transports.create(tc.toBuilder().provider(TransportConfig.Provider.SHM).build(),
                            store.scoped("rdma4j/local/" + topo.hostOf(rank)), topo.localRank(rank),
                            topo.localSize(rank));
                    ownsLocal = true;
                }
                Hierarchy h = multiHost && local != null ? Hierarchy.of(t, local, topo, rank) : null;
                if (eagerConnect) {
                    // ascending peer order on every rank: each pair's two calls meet without cycles
                    for (int p = 0; p < size; p++) {
                        if (p != rank) {
                            t.connection(p);
                        }
                    }
                    if (local != null) {
                        for (int p = 0; p < local.size(); p++) {
                            if (p != local.rank()) {
                                local.connection(p);
                            }
                        }
                    }
                }
                Engine engine = new Engine(opts.forTransport(t.provider()),
                        new FaultBoard(store), tc.newIdleStrategy(topo.localSize(rank)),
                        IdleStrategy.oversubscribed(topo.localSize(rank)));
                Shared sh = new Shared(engine, t, store, local, topo, h, ownsTransport, ownsStore, ownsLocal, policy);
                int[] ranks = new int[size];
                Arrays.setAll(ranks, i -> i);
                return new Communicator(sh, null, new Group(t, rank, ranks, ranks, 0), new CommState(0, rank, null));
            } catch (RuntimeException | Error e) {
                if (ownsLocal) {
                    local.close();
                }
                if (ownsTransport) {
                    t.close();
                }
                throw e;
            }
        }

        private static Topology exchangeHosts(Store store, int rank, int size, String id) {
            String key = "rdma4j/comm/host/";
            store.set(key + rank, id.getBytes(StandardCharsets.UTF_8));
            String[] ids = new String[size];
            for (int r = 0; r < size; r++) {
                ids[r] = r == rank ? id : new String(store.get(key + r, Duration.ofMinutes(2)), StandardCharsets.UTF_8);
            }
            return new Topology(ids);
        }

        private static String defaultHostId() {
            try {
                return InetAddress.getLocalHost().getHostName();
            } catch (Exception e) {
                return "localhost";
            }
        }
    }

    // ---- identity --------------------------------------------------------------------------

    public int rank() {
        return group.rank();
    }

    public int size() {
        return group.size();
    }

    /** This rank's index among the ranks of its host (world topology). */
    public int localRank() {
        return shared.topology.localRank(members[group.rank()]);
    }

    /** Number of ranks on this rank's host. */
    public int localSize() {
        return shared.topology.localSize(members[group.rank()]);
    }

    /** World rank of each rank of this communicator. */
    public int[] worldRanks() {
        return members.clone();
    }

    public Topology topology() {
        return shared.topology;
    }

    public CollectiveOptions options() {
        return shared.engine.options();
    }

    /** The transport provider name (tcp, shm, verbs). */
    public String provider() {
        return shared.transport.provider();
    }

    /**
     * Memory registered with this communicator's transport (pre-registered, so collectives on
     * it never copy or register anything); freed by {@link RegisteredBuffer#close()} or when the
     * world communicator closes.
     */
    public RegisteredBuffer allocate(long bytes) {
        checkOpen();
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocation of " + bytes + " bytes");
        }
        shared.engine.lock().lock();
        try {
            return shared.transport.allocate(bytes);
        } finally {
            shared.engine.lock().unlock();
        }
    }

    /** The allreduce algorithm the policy picks for {@code bytes} on this communicator. */
    public Algorithm algorithmFor(long bytes) {
        return shared.policy.choose(bytes, size(), twoHopAvailable(), windowBytes(), options().algorithm());
    }

    private long windowBytes() {
        return windowAllReduce == null ? 0 : windowAllReduce.capacity();
    }

    private boolean twoHopAvailable() {
        return world == this && shared.hierarchy != null;
    }

    // ---- allreduce -------------------------------------------------------------------------

    /** In place over the whole segment. */
    public void allReduce(MemorySegment data, DataType type, ReduceOp op) {
        allReduce(data, data, countOf(data, type), type, op);
    }

    public void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        synchronized (issueLock) {
            enter();
            try {
                doAllReduce(send, recv, count, type, op, null);
            } finally {
                exit();
            }
        }
    }

    /**
     * With an explicit algorithm for this call (it falls back to the policy's choice when it
     * cannot run on this communicator, e.g. RHD on a non-power-of-two group); every rank must
     * pass the same one.
     */
    public void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op,
                          Algorithm algorithm) {
        synchronized (issueLock) {
            enter();
            try {
                doAllReduce(send, recv, count, type, op, algorithm);
            } finally {
                exit();
            }
        }
    }

    public Work allReduceAsync(MemorySegment data, DataType type, ReduceOp op) {
        return allReduceAsync(data, data, countOf(data, type), type, op);
    }

    public Work allReduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        return submit("allReduce", () -> doAllReduce(send, recv, count, type, op, null));
    }

    public void allReduce(float[] data, ReduceOp op) {
        allReduce(MemorySegment.ofArray(data), DataType.F32, op);
    }

    public void allReduce(double[] data, ReduceOp op) {
        allReduce(MemorySegment.ofArray(data), DataType.F64, op);
    }

    public void allReduce(int[] data, ReduceOp op) {
        allReduce(MemorySegment.ofArray(data), DataType.I32, op);
    }

    public void allReduce(long[] data, ReduceOp op) {
        allReduce(MemorySegment.ofArray(data), DataType.I64, op);
    }

    /** Unsigned bytes ({@link DataType#U8}). */
    public void allReduce(byte[] data, ReduceOp op) {
        allReduce(MemorySegment.ofArray(data), DataType.U8, op);
    }

    /** bf16 or fp16 values stored as shorts. */
    public void allReduce(short[] data, DataType halfType, ReduceOp op) {
        if (halfType != DataType.BF16 && halfType != DataType.F16) {
            throw new IllegalArgumentException("short[] holds BF16 or F16 values, not " + halfType);
        }
        allReduce(MemorySegment.ofArray(data), halfType, op);
    }

    private void doAllReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op,
                             Algorithm forced) {
        long bytes = checkCount(count, type);
        checkSize("allReduce send", send, bytes);
        checkSize("allReduce recv", recv, bytes);
        if (op == null) {
            throw new IllegalArgumentException("reduce op must not be null");
        }
        Algorithm a = shared.policy.choose(bytes, size(), twoHopAvailable(), windowBytes(),
                forced != null ? forced : options().algorithm());
        Call c = begin(CollectiveKind.ALL_REDUCE, type, op, count, -1, a.ordinal());
        if (size() == 1) {
            Binder.copyIfDistinct(send, recv, bytes);
            return;
        }
        if (a == Algorithm.SHM) { // the caller's segments are copied from and reduced into as they are
            windowAllReduce.prepare(c, send, recv);
            drive(windowAllReduce);
            return;
        }
        binder.bindInOut(c, send, recv, bytes, bytes, true);
        CollectiveOp algo = switch (a) {
            case RING -> algos.ring(group, shared.engine, c);
            case TREE -> algos.tree(group, shared.engine, c);
            case RHD -> algos.rhd(group, shared.engine, c);
            case TWO_HOP -> algos.twoHop(shared.hierarchy, shared.engine, c);
            case SHM -> throw new IllegalStateException("shm allreduce handled above");
        };
        drive(algo);
        binder.finishOut(c, recv, bytes);
    }

    // ---- reduce-scatter / allgather ----------------------------------------------------------

    /** {@code send} holds size() blocks of {@code recvCount}; block {@code rank} of the reduction lands in {@code recv}. */
    public void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        synchronized (issueLock) {
            enter();
            try {
                doReduceScatter(send, recv, recvCount, type, op);
            } finally {
                exit();
            }
        }
    }

    public Work reduceScatterAsync(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        return submit("reduceScatter", () -> doReduceScatter(send, recv, recvCount, type, op));
    }

    private void doReduceScatter(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        long bytes = checkCount(count, type);
        long total = Math.multiplyExact(bytes, (long) size());
        checkSize("reduceScatter send", send, total);
        checkSize("reduceScatter recv", recv, bytes);
        Call c = begin(CollectiveKind.REDUCE_SCATTER, type, op, count, -1, -1);
        if (size() == 1) {
            Binder.copyIfDistinct(send, recv, bytes);
            return;
        }
        binder.bindInOut(c, send, recv, total, bytes, false);
        drive(algos.reduceScatter(group, shared.engine, c));
        binder.finishOut(c, recv, bytes);
    }

    /** {@code send} ({@code sendCount} elements) of every rank lands at block {@code rank} of {@code recv}. */
    public void allGather(MemorySegment send, MemorySegment recv, long sendCount, DataType type) {
        synchronized (issueLock) {
            enter();
            try {
                doAllGather(send, recv, sendCount, type);
            } finally {
                exit();
            }
        }
    }

    public Work allGatherAsync(MemorySegment send, MemorySegment recv, long sendCount, DataType type) {
        return submit("allGather", () -> doAllGather(send, recv, sendCount, type));
    }

    private void doAllGather(MemorySegment send, MemorySegment recv, long count, DataType type) {
        long bytes = checkCount(count, type);
        long total = Math.multiplyExact(bytes, (long) size());
        checkSize("allGather send", send, bytes);
        checkSize("allGather recv", recv, total);
        Call c = begin(CollectiveKind.ALL_GATHER, type, null, count, -1, -1);
        MemorySegment own = recv.asSlice(bytes * rank(), bytes);
        if (!Binder.sameMemory(send, own)) {
            MemorySegment.copy(send, 0, own, 0, bytes);
        }
        if (size() == 1) {
            return;
        }
        // The own block is already in place, so the ring reads it from the receive buffer.
        binder.bindInOut(c, recv, recv, total, total, true);
        c.send = c.recv;
        c.sendOff = c.recvOff + bytes * rank();
        drive(algos.allGather(group, shared.engine, c));
        binder.finishOut(c, recv, total);
    }

    // ---- broadcast / reduce ----------------------------------------------------------------

    /** In place: {@code data} of {@code root} is copied into {@code data} of every rank. */
    public void broadcast(MemorySegment data, long count, DataType type, int root) {
        synchronized (issueLock) {
            enter();
            try {
                doBroadcast(data, count, type, root);
            } finally {
                exit();
            }
        }
    }

    public Work broadcastAsync(MemorySegment data, long count, DataType type, int root) {
        return submit("broadcast", () -> doBroadcast(data, count, type, root));
    }

    public void broadcast(float[] data, int root) {
        broadcast(MemorySegment.ofArray(data), data.length, DataType.F32, root);
    }

    public void broadcast(double[] data, int root) {
        broadcast(MemorySegment.ofArray(data), data.length, DataType.F64, root);
    }

    public void broadcast(int[] data, int root) {
        broadcast(MemorySegment.ofArray(data), data.length, DataType.I32, root);
    }

    public void broadcast(long[] data, int root) {
        broadcast(MemorySegment.ofArray(data), data.length, DataType.I64, root);
    }

    public void broadcast(byte[] data, int root) {
        broadcast(MemorySegment.ofArray(data), data.length, DataType.U8, root);
    }

    private void doBroadcast(MemorySegment data, long count, DataType type, int root) {
        long bytes = checkCount(count, type);
        checkRoot(root);
        checkSize("broadcast data", data, bytes);
        Call c = begin(CollectiveKind.BROADCAST, type, null, count, root, -1);
        if (size() == 1) {
            return;
        }
        binder.bindInOut(c, data, data, bytes, bytes, rank() == root);
        drive(algos.broadcast(group, shared.engine, c));
        if (rank() != root) {
            binder.finishOut(c, data, bytes);
        }
    }

    /** The reduction of every rank's {@code send} lands in {@code recv} of {@code root} ({@code recv} may be null elsewhere). */
    public void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        synchronized (issueLock) {
            enter();
            try {
                doReduce(send, recv, count, type, op, root);
            } finally {
                exit();
            }
        }
    }

    public Work reduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        return submit("reduce", () -> doReduce(send, recv, count, type, op, root));
    }

    private void doReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        long bytes = checkCount(count, type);
        checkRoot(root);
        checkSize("reduce send", send, bytes);
        boolean isRoot = rank() == root;
        if (isRoot) {
            checkSize("reduce recv", recv, bytes);
        }
        Call c = begin(CollectiveKind.REDUCE, type, op, count, root, -1);
        if (size() == 1) {
            Binder.copyIfDistinct(send, recv, bytes);
            return;
        }
        if (isRoot) {
            binder.bindInOut(c, send, recv, bytes, bytes, true);
        } else {
            c.send = binder.bind(send, bytes, 0, true);
            c.sendOff = 0;
            c.recv = null;
            c.recvOff = 0;
        }
        drive(algos.reduce(group, shared.engine, c));
        if (isRoot) {
            binder.finishOut(c, recv, bytes);
        }
    }

    // ---- barrier / all-to-all / point-to-point ---------------------------------------------

    public void barrier() {
        synchronized (issueLock) {
            enter();
            try {
                doBarrier();
            } finally {
                exit();
            }
        }
    }

    public Work barrierAsync() {
        return submit("barrier", this::doBarrier);
    }

    private void doBarrier() {
        Call c = begin(CollectiveKind.BARRIER, null, null, 0, -1, -1);
        if (size() == 1) {
            return;
        }
        drive(algos.barrier(group, shared.engine, c));
    }

    /** Block {@code p} of {@code send} ({@code count} elements) goes to rank p, landing at block {@code rank} of its {@code recv}. */
    public void allToAll(MemorySegment send, MemorySegment recv, long count, DataType type) {
        synchronized (issueLock) {
            enter();
            try {
                doAllToAll(send, recv, count, type);
            } finally {
                exit();
            }
        }
    }

    public Work allToAllAsync(MemorySegment send, MemorySegment recv, long count, DataType type) {
        return submit("allToAll", () -> doAllToAll(send, recv, count, type));
    }

    private void doAllToAll(MemorySegment send, MemorySegment recv, long count, DataType type) {
        long bytes = checkCount(count, type);
        long total = Math.multiplyExact(bytes, (long) size());
        checkSize("allToAll send", send, total);
        checkSize("allToAll recv", recv, total);
        if (Binder.sameMemory(send, recv) || Binder.overlaps(send, recv)) {
            throw new IllegalArgumentException("allToAll needs distinct send and receive buffers");
        }
        Call c = begin(CollectiveKind.ALL_TO_ALL, type, null, count, -1, -1);
        MemorySegment.copy(send, bytes * rank(), recv, bytes * rank(), bytes);
        if (size() == 1) {
            return;
        }
        binder.bindInOut(c, send, recv, total, total, true);
        drive(algos.allToAll(group, shared.engine, c));
        binder.finishOut(c, recv, total);
    }

    /** Sends {@code count} elements to {@code peer}, which must call {@link #recv} with the same count and type. */
    public void send(MemorySegment data, long count, DataType type, int peer) {
        synchronized (issueLock) {
            enter();
            try {
                doP2p(true, data, count, type, peer);
            } finally {
                exit();
            }
        }
    }

    public void recv(MemorySegment data, long count, DataType type, int peer) {
        synchronized (issueLock) {
            enter();
            try {
                doP2p(false, data, count, type, peer);
            } finally {
                exit();
            }
        }
    }

    public Work sendAsync(MemorySegment data, long count, DataType type, int peer) {
        return submit("send", () -> doP2p(true, data, count, type, peer));
    }

    public Work recvAsync(MemorySegment data, long count, DataType type, int peer) {
        return submit("recv", () -> doP2p(false, data, count, type, peer));
    }

    private void doP2p(boolean isSend, MemorySegment data, long count, DataType type, int peer) {
        long bytes = checkCount(count, type);
        if (peer < 0 || peer >= size() || peer == rank()) {
            throw new IllegalArgumentException("peer " + peer + " is not another rank of this communicator of "
                    + size());
        }
        checkSize(isSend ? "send data" : "recv data", data, bytes);
        checkOpen();
        long seq = isSend ? p2pSendSeq[peer]++ : p2pRecvSeq[peer]++;
        begin(CollectiveKind.SEND_RECV, type, null, count, -1, -1, seq);
        binder.bindInOut(call, data, data, bytes, bytes, isSend);
        drive(algos.pointToPoint(group, shared.engine, call, isSend, peer));
        if (!isSend) {
            binder.finishOut(call, data, bytes);
        }
    }

    // ---- split -----------------------------------------------------------------------------

    /**
     * Splits this communicator (a collective over all its ranks): ranks with the same
     * {@code color} form a new communicator, ordered by {@code key} then by rank. A negative
     * color joins none (returns null). The new communicator shares this one's transport and
     * connections; its messages carry their own context id in the tag.
     */
    public Communicator split(int color, int key) {
        synchronized (issueLock) {
            enter();
            try {
                return doSplit(color, key);
            } finally {
                exit();
            }
        }
    }

    private Communicator doSplit(int color, int key) {
        int n = size();
        // heap memory on purpose: it is copied through registered scratch, so no transient
        // native segment ever enters the transport's registration cache
        long[] all = new long[3 * n];
        long next;
        synchronized (shared) {
            next = shared.nextCtx;
        }
        all[3 * rank()] = color;
        all[3 * rank() + 1] = key;
        all[3 * rank() + 2] = next;
        if (n > 1) {
            MemorySegment seg = MemorySegment.ofArray(all);
            Call c = begin(CollectiveKind.SPLIT, DataType.I64, null, 3, -1, -1);
            binder.bindInOut(c, seg, seg, 24L * n, 24L * n, true);
            c.send = c.recv;
            c.sendOff = c.recvOff + 24L * rank();
            drive(algos.allGather(group, shared.engine, c));
            binder.finishOut(c, seg, 24L * n);
        }
        long base = 0;
        TreeSet<Long> colors = new TreeSet<>();
        for (int r = 0; r < n; r++) {
            base = Math.max(base, all[3 * r + 2]);
            if (all[3 * r] >= 0) {
                colors.add(all[3 * r]);
            }
        }
        synchronized (shared) {
            shared.nextCtx = Math.max(shared.nextCtx, base + colors.size());
        }
        if (color < 0) {
            return null;
        }
        long ctx = base + colors.headSet((long) color).size();
        if (ctx > Group.MAX_CTX) {
            throw new CollectiveException(-1, "too many communicators: context ids exhausted (" + Group.MAX_CTX + ")");
        }
        List<long[]> picked = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            if (all[3 * r] == color) {
                picked.add(new long[] {all[3 * r + 1], r});
            }
        }
        picked.sort((x, y) -> x[0] != y[0] ? Long.compare(x[0], y[0]) : Long.compare(x[1], y[1]));
        int[] tr = new int[picked.size()];
        int[] wr = new int[picked.size()];
        int myIndex = -1;
        for (int i = 0; i < tr.length; i++) {
            int parentRank = (int) picked.get(i)[1];
            tr[i] = group.transportRank(parentRank);
            wr[i] = members[parentRank];
            if (parentRank == rank()) {
                myIndex = i;
            }
        }
        Group g = new Group(shared.transport, myIndex, tr, wr, (int) ctx);
        return new Communicator(shared, world, g, new CommState((int) ctx, members[rank()], world.state));
    }

    // ---- execution -------------------------------------------------------------------------

    private Call begin(CollectiveKind kind, DataType type, ReduceOp op, long count, int root, int algo) {
        checkOpen();
        return begin(kind, type, op, count, root, algo, state.nextSeq());
    }

    private Call begin(CollectiveKind kind, DataType type, ReduceOp op, long count, int root, int algo, long seq) {
        Call c = call;
        c.identity.set(kind, type, op, count, root, algo, seq);
        c.identity.sender = members[rank()];
        c.type = type;
        c.op = op;
        c.reducer = type != null && op != null ? Reducer.of(type, op) : null;
        c.count = count;
        c.root = root;
        c.contributors = size();
        return c;
    }

    private void drive(CollectiveOp op) {
        shared.engine.drive(op, state, members);
    }

    /** Start of a synchronous call (under issueLock): after earlier async work, holding the engine. */
    private void enter() {
        awaitTail();
        checkOpen();
        shared.engine.lock().lock();
    }

    private void exit() {
        shared.engine.lock().unlock();
    }

    private void runLocked(Runnable body) {
        checkOpen();
        shared.engine.lock().lock();
        try {
            body.run();
        } finally {
            shared.engine.lock().unlock();
        }
    }

    private Work submit(String what, Runnable body) {
        synchronized (issueLock) {
            checkOpen();
            if (worker == null) {
                String name = "rdma4j-comm" + state.ctx() + "-r" + members[rank()];
                worker = Executors.newSingleThreadExecutor(r -> {
                    Thread t = new Thread(r, name);
                    t.setDaemon(true);
                    return t;
                });
            }
            CompletableFuture<Void> f = tail.handle((v, e) -> null)
                    .thenRunAsync(() -> runLocked(body), worker);
            tail = f;
            return new Work(f, what);
        }
    }

    /** Synchronous calls wait for earlier asynchronous ones (issue order = execution order). */
    private void awaitTail() {
        CompletableFuture<Void> t = tail;
        if (!t.isDone()) {
            try {
                t.join();
            } catch (RuntimeException e) {
                // that work's failure was reported to its own handle; the broken flag carries on
            }
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("communicator (rank " + rank() + " of " + size() + ") is closed");
        }
        CollectiveException a = state.abortCause();
        if (a != null) {
            throw a;
        }
        CollectiveException b = state.brokenCause();
        if (b != null) {
            throw new CollectiveException(b.failedRank(), "communicator is broken by an earlier failure: "
                    + b.getMessage(), b);
        }
    }

    // ---- argument checks -------------------------------------------------------------------

    private static long countOf(MemorySegment data, DataType type) {
        if (data.byteSize() % type.byteSize() != 0) {
            throw new IllegalArgumentException("segment of " + data.byteSize() + " bytes is not a whole number of "
                    + type + " elements");
        }
        return data.byteSize() / type.byteSize();
    }

    private static long checkCount(long count, DataType type) {
        if (type == null) {
            throw new IllegalArgumentException("data type must not be null");
        }
        return type.bytes(count);
    }

    private static void checkSize(String what, MemorySegment seg, long bytes) {
        if (seg == null) {
            throw new IllegalArgumentException(what + " buffer is null");
        }
        if (seg.byteSize() < bytes) {
            throw new IllegalArgumentException(what + " buffer holds " + seg.byteSize() + " bytes, needs " + bytes);
        }
    }

    private void checkRoot(int root) {
        if (root < 0 || root >= size()) {
            throw new IllegalArgumentException("root " + root + " outside communicator of size " + size());
        }
    }

    // ---- lifecycle -------------------------------------------------------------------------

    /**
     * Aborts: every pending and future call of this communicator fails with a
     * {@link CommunicatorAbortedException}, the other ranks are told through the fault board, and
     * for a world communicator the transport is aborted too (so nothing stays blocked in it).
     * Safe from any thread; idempotent.
     */
    public void abort() {
        abort(null);
    }

    public void abort(Throwable cause) {
        int me = members[rank()];
        CommunicatorAbortedException e = new CommunicatorAbortedException(me, "rank " + me + " aborted the communicator"
                + (cause == null ? "" : ": " + cause), cause);
        state.abort(e);
        shared.engine.board().post(state.ctx(), new FaultBoard.Fault(FaultBoard.FaultKind.ABORTED, me, me,
                e.getMessage()));
        if (world == this) {
            shared.transport.abort(e);
            if (shared.localTransport != null) {
                shared.localTransport.abort(e);
            }
        }
    }

    /**
     * Waits (up to the timeout) for issued asynchronous work, then releases this communicator;
     * a world communicator also releases its staging memory and the transports and store it
     * created. Idempotent.
     */
    @Override
    public void close() {
        synchronized (issueLock) {
            if (closed) {
                return;
            }
            try {
                tail.get(options().timeout().toMillis(), TimeUnit.MILLISECONDS);
            } catch (Exception ignored) {
                // failures were reported through their Work handles
            }
            closed = true;
            if (worker != null) {
                worker.shutdownNow();
            }
        }
        if (world == this) {
            shared.engine.lock().lock();
            try {
                shared.engine.close();
            } finally {
                shared.engine.lock().unlock();
            }
            if (shared.ownsLocal) {
                shared.localTransport.close();
            }
            if (shared.ownsTransport) {
                shared.transport.close();
            }
            if (shared.ownsStore) {
                shared.store.close();
            }
        }
    }

    @Override
    public String toString() {
        return "Communicator{rank=" + rank() + ", size=" + size() + ", ctx=" + state.ctx() + ", provider="
                + provider() + "}";
    }
}
