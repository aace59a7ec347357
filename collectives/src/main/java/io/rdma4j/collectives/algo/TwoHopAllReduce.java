package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.AlgorithmPolicy;
import io.rdma4j.collectives.Algorithm;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveKind;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.Descriptor;
import io.rdma4j.collectives.core.Engine;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Partition;
import io.rdma4j.collectives.reduce.Reducer;

/**
 * Hierarchical allreduce for several hosts with l ranks each, as an explicit state machine:
 *
 * <pre>
 * LOCAL_REDUCE_SCATTER --[every local contribution to my shard reduced]--> CROSS_ALL_REDUCE
 * CROSS_ALL_REDUCE     --[my shard reduced across all hosts]-------------> LOCAL_ALL_GATHER
 * LOCAL_ALL_GATHER     --[every shard of the host received]--------------> DONE
 * </pre>
 *
 * <ol>
 *   <li>Intra-host ring reduce-scatter over the local (shared-memory) transport: local rank i
 *       ends with shard i of the host's sum, written into its receive buffer where the final
 *       result belongs (that buffer is registered with both transports).</li>
 *   <li>Inter-host allreduce of that shard, in place, among the ranks with the same local rank
 *       (one per host) over the network transport; the shard is sent from where the first hop
 *       left it, no copy. Ring, tree or recursive doubling as the policy picks for the shard size.</li>
 *   <li>Intra-host ring allgather of the shards over the local transport.</li>
 * </ol>
 * The second hop starts only when the first hop's op is done, i.e. every one of the l-1 local
 * contributions to this rank's shard arrived and was reduced, and all its sends completed. Each
 * hop exchanges descriptors of its own kind, so a mismatch is caught per hop. AVG sums locally
 * and divides by the world size once, after the cross-host hop (fp16's AVG comes here as a sum of
 * inputs already divided, see ReduceOp).
 */
public final class TwoHopAllReduce extends CollectiveOp {

    /** Named states; transitions only on the named conditions. */
    enum State { LOCAL_REDUCE_SCATTER, CROSS_ALL_REDUCE, LOCAL_ALL_GATHER, DONE }

    private final RingShardPhase localReduceScatter = new RingShardPhase();
    private final RingShardPhase localAllGather = new RingShardPhase();
    private final RingAllReduce crossRing = new RingAllReduce();
    private final DoubleBinaryTreeAllReduce crossTree = new DoubleBinaryTreeAllReduce();
    private final RecursiveHalvingDoublingAllReduce crossRhd = new RecursiveHalvingDoublingAllReduce();
    private final Call localCall = new Call();
    private final Call crossCall = new Call();
    private final Descriptor rsDesc = new Descriptor();
    private final Descriptor crossDesc = new Descriptor();
    private final Descriptor agDesc = new Descriptor();
    private CollectiveOp cross;
    private Descriptor identity;
    private State state;

    @Override
    public Descriptor identity() {
        return identity;
    }

    State state() {
        return state;
    }

    public void prepare(Hierarchy h, Engine engine, Call c, AlgorithmPolicy policy) {
        this.identity = c.identity;
        Group local = h.local();
        Group crossGroup = h.cross();
        int l = local.size();
        int lr = local.rank();
        int es = c.elemBytes();

        // hop 1 and 3 run on the local transport: same memory, registered there too
        localCall.identity.copyFrom(c.identity);
        localCall.type = c.type;
        localCall.op = c.op == ReduceOp.AVG ? ReduceOp.SUM : c.op;
        localCall.reducer = Reducer.of(c.type, localCall.op);
        localCall.count = c.count;
        localCall.contributors = c.contributors;
        localCall.send = local.transport().register(c.send.segment());
        localCall.sendOff = c.sendOff;
        localCall.recv = c.recv == c.send ? localCall.send : local.transport().register(c.recv.segment());
        localCall.recvOff = c.recvOff;
        rsDesc.copyFrom(c.identity).kind = CollectiveKind.TWO_HOP_LOCAL_REDUCE_SCATTER;
        localReduceScatter.prepareReduceScatter(local, engine.staging(local.transport()), engine.options(),
                localCall, rsDesc);

        // hop 2: this rank's shard, in place in the (network-registered) receive buffer
        long lo = Partition.start(c.count, l, lr);
        long len = Partition.length(c.count, l, lr);
        crossCall.identity.copyFrom(c.identity);
        crossCall.type = c.type;
        crossCall.op = c.op;
        crossCall.reducer = c.reducer;
        crossCall.count = len;
        crossCall.contributors = c.contributors;
        crossCall.send = c.recv;
        crossCall.recv = c.recv;
        crossCall.sendOff = crossCall.recvOff = c.recvOff + lo * es;
        Algorithm a = policy.choose(len * es, crossGroup.size(), false, null);
        crossDesc.copyFrom(c.identity);
        crossDesc.kind = CollectiveKind.TWO_HOP_CROSS_ALL_REDUCE;
        crossDesc.count = len;
        crossDesc.algo = a.ordinal();
        var st = engine.staging(crossGroup.transport());
        cross = switch (a) {
            case RHD -> {
                crossRhd.prepare(crossGroup, st, engine.options(), crossCall, crossDesc, policy.recursiveDoublingBytes());
                yield crossRhd;
            }
            case TREE -> {
                crossTree.prepare(crossGroup, st, engine.options(), crossCall, crossDesc);
                yield crossTree;
            }
            default -> {
                crossRing.prepare(crossGroup, st, engine.options(), crossCall, crossDesc);
                yield crossRing;
            }
        };
        state = State.LOCAL_REDUCE_SCATTER;
    }

    private void prepareAllGather(Engine engine, Group local) {
        localCall.send = localCall.recv;
        localCall.sendOff = localCall.recvOff;
        agDesc.copyFrom(identity).kind = CollectiveKind.TWO_HOP_LOCAL_ALL_GATHER;
        localAllGather.prepareAllGather(local, engine.staging(local.transport()), engine.options(), localCall, agDesc);
    }

    private Engine engine;
    private Group localGroup;

    /** Binds the engine and local group used when the third hop is prepared. */
    public TwoHopAllReduce with(Engine engine, Hierarchy h) {
        this.engine = engine;
        this.localGroup = h.local();
        return this;
    }

    @Override
    public void start() {
        localReduceScatter.start();
    }

    @Override
    public boolean step() {
        switch (state) {
            case LOCAL_REDUCE_SCATTER -> {
                boolean p = localReduceScatter.step();
                if (allLocalContributionsReduced()) {
                    state = State.CROSS_ALL_REDUCE;
                    cross.start();
                    return true;
                }
                return p;
            }
            case CROSS_ALL_REDUCE -> {
                boolean p = cross.step();
                if (shardReducedAcrossHosts()) {
                    state = State.LOCAL_ALL_GATHER;
                    prepareAllGather(engine, localGroup);
                    localAllGather.start();
                    return true;
                }
                return p;
            }
            case LOCAL_ALL_GATHER -> {
                boolean p = localAllGather.step();
                if (hostShardsGathered()) {
                    state = State.DONE;
                    return true;
                }
                return p;
            }
            default -> {
                return false;
            }
        }
    }

    /** Condition of the first transition: all l-1 contributions to this rank's shard are in and reduced. */
    private boolean allLocalContributionsReduced() {
        return localReduceScatter.isDone();
    }

    private boolean shardReducedAcrossHosts() {
        return cross.isDone();
    }

    private boolean hostShardsGathered() {
        return localAllGather.isDone();
    }

    @Override
    public boolean isDone() {
        return state == State.DONE;
    }

    @Override
    public int waitingFor() {
        return switch (state) {
            case LOCAL_REDUCE_SCATTER -> localReduceScatter.waitingFor();
            case CROSS_ALL_REDUCE -> cross.waitingFor();
            case LOCAL_ALL_GATHER -> localAllGather.waitingFor();
            case DONE -> -1;
        };
    }
}
