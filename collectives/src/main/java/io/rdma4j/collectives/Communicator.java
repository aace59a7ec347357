package io.rdma4j.collectives;

import io.rdma4j.collectives.core.CommState;
import io.rdma4j.collectives.core.FaultBoard;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.bootstrap.Store;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.function.BooleanSupplier;

import static io.rdma4j.collectives.Request.Kind.ALL_GATHER;
import static io.rdma4j.collectives.Request.Kind.ALL_REDUCE;
import static io.rdma4j.collectives.Request.Kind.ALL_TO_ALL;
import static io.rdma4j.collectives.Request.Kind.BARRIER;
import static io.rdma4j.collectives.Request.Kind.BROADCAST;
import static io.rdma4j.collectives.Request.Kind.RECV;
import static io.rdma4j.collectives.Request.Kind.REDUCE;
import static io.rdma4j.collectives.Request.Kind.REDUCE_SCATTER;
import static io.rdma4j.collectives.Request.Kind.SEND;
import static io.rdma4j.collectives.Request.NO_ROOT;

/**
 * A group of ranks that run collectives together: the API a training framework calls.
 *
 * <p><b>Creation.</b> {@link #fromEnvironment()} reads the {@code env://} contract
 * (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, RDMA4J_JOB_TOKEN;
 * or Open MPI's OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE; or PMI_RANK/PMI_SIZE), starts
 * the bootstrap store and the transport chosen by {@link io.rdma4j.transport.TransportConfig}
 * (RDMA4J_TRANSPORT).
 * {@link #builder()} takes an explicit store and/or transport. Ranks exchange host identities
 * (host name, or RDMA4J_HOST_ID) through the store; when ranks span several hosts with the same
 * number of ranks each and the main transport is not shared memory, a shared-memory transport
 * is also created per host for the two-hop allreduce. A build that failed (a rank that did not
 * come within the transport's timeout, RDMA4J_TIMEOUT_MS) may be retried on the same store: a rank
 * that comes after the others gave up skips the world they abandoned and meets their retry.
 *
 * <p><b>Semantics.</b> Every rank must issue the same collectives in the same order (as with
 * NCCL/MPI). Buffers are {@link MemorySegment}s, native (zero-copy: registered with the
 * transport, the registration cached) or heap (copied through registered scratch). Counts follow
 * NCCL: reduce-scatter's count is what each rank receives, allgather's what each rank sends,
 * all-to-all's what goes to each peer. A call is in place when send and receive are the same
 * segment (reduce-scatter: receive is block {@code rank} of send; allgather: send is block
 * {@code rank} of receive); send and receive that overlap otherwise (allgather excepted: its
 * send is copied into its block before anything else is written), a read-only or freed
 * buffer, and counts out of range are refused with an exception on the rank that passed them,
 * before the call starts: it takes no place in the order of calls (the other ranks, which
 * issued it, wait for it until their timeout names this rank). Synchronous calls run on the
 * caller's thread; {@code *Async} calls are checked the same way when issued, return a reusable
 * {@link Work} handle and run on the communicator's progress thread, or on a thread that awaits
 * them; neither kind allocates once warm. An asynchronous call's buffers belong to the call until
 * its handle is done ({@link Work#isDone()}): a buffer freed before the call ran breaks the
 * communicator, and one freed while it runs is memory the transport may still copy into. All of them, synchronous or not,
 * execute and complete in issue order. Collectives of communicators that share a transport
 * (a world and its splits) execute one at a time, in the order each rank issued them across
 * those communicators, so every rank must issue them in the same order there too.
 *
 * <p><b>Faults.</b> A collective that fails (dead or unresponsive peer, mismatched call,
 * abort, timeout) throws a {@link CollectiveException} naming the rank to blame, on every rank
 * (through the fault board in the store), and breaks the communicator: later calls throw the same
 * cause. {@link #abort()} unblocks every pending call of this communicator (and, for a world
 * communicator, its transport) and tells the other ranks.
 */
public final class Communicator implements AutoCloseable {
    private final World world;
    /** Whether this is the world communicator (which owns the world) rather than a split. */
    private final boolean isWorld;
    private final Group group;
    private final CommState state;
    private final CollectiveCalls calls;
    private final IssueOrder issue;

    private Communicator(World world, boolean isWorld, Group group, CommState state) {
        this.world = world;
        this.isWorld = isWorld;
        this.group = group;
        this.state = state;
        this.calls = new CollectiveCalls(world, group, state, isWorld);
        this.issue = new IssueOrder(calls, world.engine, world.issueOrder, state,
                "rdma4j-comm" + group.ctx() + "-r" + state.worldRank());
        if (!isWorld) {
            world.splitOpened(issue);
        }
    }

    static Communicator world(World world, int rank) {
        int[] ranks = new int[world.transport.size()];
        Arrays.setAll(ranks, i -> i);
        return new Communicator(world, true, new Group(world.transport, rank, ranks, ranks, 0),
                CommState.world(world.id, rank));
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
            return Bootstrap.fromEnvironment(env, store, true);
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
        return Bootstrap.fromEnvironment(env, store, false);
    }

    /**
     * The bootstrap store that {@code env} describes (see the class description); its server runs
     * in rank 0 unless {@code RDMA4J_STORE_SERVER} names the ranks that host one.
     */
    public static Store bootstrapStore(Map<String, String> env) {
        return Bootstrap.store(env);
    }

    public static CommunicatorBuilder builder() {
        return new CommunicatorBuilder();
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
        return world.topology.localRank(state.worldRank());
    }

    /** Number of ranks on this rank's host. */
    public int localSize() {
        return world.topology.localSize(state.worldRank());
    }

    /** World rank of each rank of this communicator. */
    public int[] worldRanks() {
        return group.worldRanks();
    }

    public Topology topology() {
        return world.topology;
    }

    public CollectiveOptions options() {
        return world.engine.options();
    }

    /** The transport provider name (tcp, shm, verbs). */
    public String provider() {
        return world.transport.provider();
    }

    /**
     * Memory registered with this communicator's transport (pre-registered, so collectives on
     * it never copy or register anything); freed by {@link RegisteredBuffer#close()} or when the
     * world communicator closes.
     */
    public RegisteredBuffer allocate(long bytes) {
        calls.checkUsable();
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocation of " + bytes + " bytes");
        }
        world.engine.lock().lock();
        try {
            return world.transport.allocate(bytes);
        } finally {
            world.engine.lock().unlock();
        }
    }

    /** The allreduce algorithm the policy picks for {@code bytes} on this communicator. */
    public Algorithm algorithmFor(long bytes) {
        return calls.algorithmFor(bytes, null);
    }

    // ---- allreduce -------------------------------------------------------------------------

    /** In place over the whole segment. */
    public void allReduce(MemorySegment data, DataType type, ReduceOp op) {
        allReduce(data, data, countOf(data, type), type, op);
    }

    public void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        issue.run(ALL_REDUCE, send, recv, count, type, op, NO_ROOT, null);
    }

    /**
     * With an explicit algorithm for this call (it falls back to the policy's choice when it
     * cannot run on this communicator, e.g. RHD on a non-power-of-two group); every rank must
     * pass the same one.
     */
    public void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op,
                          Algorithm algorithm) {
        issue.run(ALL_REDUCE, send, recv, count, type, op, NO_ROOT, algorithm);
    }

    public Work allReduceAsync(MemorySegment data, DataType type, ReduceOp op) {
        return allReduceAsync(data, data, countOf(data, type), type, op);
    }

    public Work allReduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        return issue.submit(ALL_REDUCE, send, recv, count, type, op, NO_ROOT, null);
    }

    /**
     * {@link #allReduceAsync} of a vector that is complete once {@code inputReady} holds: the
     * call waits for it where it runs ({@link GradientBucketer#markReadyWhen}).
     */
    Work allReduceAsyncWhen(MemorySegment data, long count, DataType type, ReduceOp op, BooleanSupplier inputReady) {
        return issue.submit(ALL_REDUCE, data, data, count, type, op, NO_ROOT, null, inputReady);
    }

    public void allReduce(float[] data, ReduceOp op) {
        allReduce(MemorySegment.ofArray(required(data)), DataType.F32, op);
    }

    public void allReduce(double[] data, ReduceOp op) {
        allReduce(MemorySegment.ofArray(required(data)), DataType.F64, op);
    }

    public void allReduce(int[] data, ReduceOp op) {
        allReduce(MemorySegment.ofArray(required(data)), DataType.I32, op);
    }

    public void allReduce(long[] data, ReduceOp op) {
        allReduce(MemorySegment.ofArray(required(data)), DataType.I64, op);
    }

    /** Unsigned bytes ({@link DataType#U8}). */
    public void allReduce(byte[] data, ReduceOp op) {
        allReduce(MemorySegment.ofArray(required(data)), DataType.U8, op);
    }

    /** bf16 or fp16 values stored as shorts. */
    public void allReduce(short[] data, DataType halfType, ReduceOp op) {
        if (halfType != DataType.BF16 && halfType != DataType.F16) {
            throw new IllegalArgumentException("short[] holds BF16 or F16 values, not " + halfType);
        }
        allReduce(MemorySegment.ofArray(required(data)), halfType, op);
    }

    // ---- reduce-scatter / allgather ----------------------------------------------------------

    /** {@code send} holds size() blocks of {@code recvCount}; block {@code rank} of the reduction lands in {@code recv}. */
    public void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        issue.run(REDUCE_SCATTER, send, recv, recvCount, type, op, NO_ROOT, null);
    }

    public Work reduceScatterAsync(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        return issue.submit(REDUCE_SCATTER, send, recv, recvCount, type, op, NO_ROOT, null);
    }

    /** {@code send} ({@code sendCount} elements) of every rank lands at block {@code rank} of {@code recv}. */
    public void allGather(MemorySegment send, MemorySegment recv, long sendCount, DataType type) {
        issue.run(ALL_GATHER, send, recv, sendCount, type, null, NO_ROOT, null);
    }

    public Work allGatherAsync(MemorySegment send, MemorySegment recv, long sendCount, DataType type) {
        return issue.submit(ALL_GATHER, send, recv, sendCount, type, null, NO_ROOT, null);
    }

    // ---- broadcast / reduce ----------------------------------------------------------------

    /** In place: {@code data} of {@code root} is copied into {@code data} of every rank. */
    public void broadcast(MemorySegment data, long count, DataType type, int root) {
        issue.run(BROADCAST, data, data, count, type, null, root, null);
    }

    public Work broadcastAsync(MemorySegment data, long count, DataType type, int root) {
        return issue.submit(BROADCAST, data, data, count, type, null, root, null);
    }

    public void broadcast(float[] data, int root) {
        broadcast(MemorySegment.ofArray(required(data)), data.length, DataType.F32, root);
    }

    public void broadcast(double[] data, int root) {
        broadcast(MemorySegment.ofArray(required(data)), data.length, DataType.F64, root);
    }

    public void broadcast(int[] data, int root) {
        broadcast(MemorySegment.ofArray(required(data)), data.length, DataType.I32, root);
    }

    public void broadcast(long[] data, int root) {
        broadcast(MemorySegment.ofArray(required(data)), data.length, DataType.I64, root);
    }

    public void broadcast(byte[] data, int root) {
        broadcast(MemorySegment.ofArray(required(data)), data.length, DataType.U8, root);
    }

    /** The reduction of every rank's {@code send} lands in {@code recv} of {@code root} ({@code recv} may be null elsewhere). */
    public void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        issue.run(REDUCE, send, recv, count, type, op, root, null);
    }

    public Work reduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        return issue.submit(REDUCE, send, recv, count, type, op, root, null);
    }

    // ---- barrier / all-to-all / point-to-point ---------------------------------------------

    public void barrier() {
        issue.run(BARRIER, null, null, 0, null, null, NO_ROOT, null);
    }

    public Work barrierAsync() {
        return issue.submit(BARRIER, null, null, 0, null, null, NO_ROOT, null);
    }

    /** Block {@code p} of {@code send} ({@code count} elements) goes to rank p, landing at block {@code rank} of its {@code recv}. */
    public void allToAll(MemorySegment send, MemorySegment recv, long count, DataType type) {
        issue.run(ALL_TO_ALL, send, recv, count, type, null, NO_ROOT, null);
    }

    public Work allToAllAsync(MemorySegment send, MemorySegment recv, long count, DataType type) {
        return issue.submit(ALL_TO_ALL, send, recv, count, type, null, NO_ROOT, null);
    }

    /** Sends {@code count} elements to {@code peer}, which must call {@link #recv} with the same count and type. */
    public void send(MemorySegment data, long count, DataType type, int peer) {
        issue.run(SEND, data, data, count, type, null, peer, null);
    }

    /** Receives {@code count} elements from {@code peer}, which must call {@link #send} with the same count and type. */
    public void recv(MemorySegment data, long count, DataType type, int peer) {
        issue.run(RECV, data, data, count, type, null, peer, null);
    }

    /**
     * {@link #send} issued as an asynchronous call. It runs in issue order with every other call
     * of this communicator, and completes only once {@code peer} runs the matching receive: the
     * calls issued after it wait for that. So exchanges in a cycle of three ranks or more (each
     * sends to its right, then receives from its left) wait for each other until the timeout, as
     * blocking sends would; order them as for blocking calls (e.g. even ranks send first, odd
     * ranks receive first) or use {@link #allToAll}.
     */
    public Work sendAsync(MemorySegment data, long count, DataType type, int peer) {
        return issue.submit(SEND, data, data, count, type, null, peer, null);
    }

    /** {@link #recv} issued as an asynchronous call: in issue order, as {@link #sendAsync} says. */
    public Work recvAsync(MemorySegment data, long count, DataType type, int peer) {
        return issue.submit(RECV, data, data, count, type, null, peer, null);
    }

    // ---- split -----------------------------------------------------------------------------

    /**
     * Splits this communicator (a collective over all its ranks): ranks with the same
     * {@code color} form a new communicator, ordered by {@code key} then by rank. A negative
     * color joins none (returns null). The new communicator shares this one's transport and
     * connections; its messages carry their own context id in the tag. Context ids are not given
     * back when a split closes: a world makes at most 32,766
     * splits in its life (each color of a split takes one), after which split throws; make the
     * splits a job needs once and reuse them rather than splitting per step.
     */
    public Communicator split(int color, int key) {
        return issue.runExclusive(() -> {
            Split s = new Split(size(), rank(), color, key, world.contextIds.proposal());
            calls.gatherSplit(s);
            world.contextIds.reserveBelow(s.contextEnd());
            Group g = s.group(group);
            return g == null ? null
                    : new Communicator(world, false, g, CommState.split(state.world(), g, state.worldRank()));
        });
    }

    private static long countOf(MemorySegment data, DataType type) {
        required(data);
        CollectiveCalls.requireType(type);
        if (data.byteSize() % type.byteSize() != 0) {
            throw new IllegalArgumentException("segment of " + data.byteSize() + " bytes is not a whole number of "
                    + type + " elements");
        }
        return data.byteSize() / type.byteSize();
    }

    /** The convenience overloads' data, refused as the segment calls refuse a null buffer. */
    private static <T> T required(T data) {
        if (data == null) {
            throw new IllegalArgumentException("data buffer is null");
        }
        return data;
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
        int me = state.worldRank();
        CommunicatorAbortedException e = new CommunicatorAbortedException(me, "rank " + me + " aborted the communicator"
                + (cause == null ? "" : ": " + cause), cause);
        state.abort(e);
        world.engine.board().post(state.board(), new FaultBoard.Fault(FaultBoard.FaultKind.ABORTED, me, me,
                e.getMessage()));
        if (isWorld) {
            world.abortTransports(e);
        }
    }

    /**
     * Waits (up to the timeout) for issued asynchronous work, then releases this communicator;
     * a world communicator also closes the splits made from it that are still open, and releases
     * its staging memory and the transports and store it created. Idempotent.
     */
    @Override
    public void close() {
        Duration timeout = options().timeout();
        if (!issue.close(timeout)) {
            return;
        }
        if (isWorld) {
            world.close(timeout);
        } else {
            world.splitClosed(issue);
        }
    }

    /** Id of the thread that runs asynchronous calls, -1 before the first one (for allocation tests). */
    long progressThreadId() {
        return issue.progressThreadId();
    }

    @Override
    public String toString() {
        return "Communicator{rank=" + rank() + ", size=" + size() + ", ctx=" + group.ctx() + ", provider="
                + provider() + "}";
    }
}
