package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.AlgorithmPolicy;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.Engine;
import io.rdma4j.collectives.core.Group;

/**
 * One reusable instance of every algorithm for a communicator (a communicator runs one
 * collective at a time), prepared for each call.
 */
public final class Algorithms {
    private final AlgorithmPolicy policy;
    private RingAllReduce ring;
    private DoubleBinaryTreeAllReduce tree;
    private RecursiveHalvingDoublingAllReduce rhd;
    private RecursiveDoublingAllReduce rd;
    private TwoHopAllReduce twoHop;
    private RingReduceScatter reduceScatter;
    private RingAllGather allGather;
    private PipelinedBroadcast broadcast;
    private TreeReduce reduce;
    private DisseminationBarrier barrier;
    private PairwiseAllToAll allToAll;
    private PointToPoint p2p;

    public Algorithms(AlgorithmPolicy policy) {
        this.policy = policy;
    }

    public CollectiveOp ring(Group g, Engine e, Call c) {
        if (ring == null) {
            ring = new RingAllReduce();
        }
        ring.prepare(g, e.staging(g.transport()), e.options(), c);
        return ring;
    }

    public CollectiveOp tree(Group g, Engine e, Call c) {
        if (tree == null) {
            tree = new DoubleBinaryTreeAllReduce();
        }
        tree.prepare(g, e.staging(g.transport()), e.options(), c);
        return tree;
    }

    /** Power-of-two groups: eager recursive doubling for small vectors, else Rabenseifner. */
    public CollectiveOp rhd(Group g, Engine e, Call c) {
        if (c.count * c.elemBytes() <= policy.smallBytes() && RecursiveDoublingAllReduce.fits(c.count * c.elemBytes(), g.size())) {
            if (rd == null) {
                rd = new RecursiveDoublingAllReduce();
            }
            rd.prepare(g, e.staging(g.transport()), c);
            return rd;
        }
        if (rhd == null) {
            rhd = new RecursiveHalvingDoublingAllReduce();
        }
        rhd.prepare(g, e.staging(g.transport()), e.options(), c, policy.smallBytes());
        return rhd;
    }

    public CollectiveOp twoHop(Hierarchy h, Engine e, Call c) {
        if (twoHop == null) {
            twoHop = new TwoHopAllReduce();
        }
        twoHop.prepare(h, e, c, policy);
        return twoHop.with(e, h);
    }

    public CollectiveOp reduceScatter(Group g, Engine e, Call c) {
        if (reduceScatter == null) {
            reduceScatter = new RingReduceScatter();
        }
        reduceScatter.prepare(g, e.staging(g.transport()), e.options(), c);
        return reduceScatter;
    }

    public CollectiveOp allGather(Group g, Engine e, Call c) {
        if (allGather == null) {
            allGather = new RingAllGather();
        }
        allGather.prepare(g, e.staging(g.transport()), e.options(), c);
        return allGather;
    }

    public CollectiveOp broadcast(Group g, Engine e, Call c) {
        if (broadcast == null) {
            broadcast = new PipelinedBroadcast();
        }
        broadcast.prepare(g, e.staging(g.transport()), e.options(), c, policy.treeBytes());
        return broadcast;
    }

    public CollectiveOp reduce(Group g, Engine e, Call c) {
        if (reduce == null) {
            reduce = new TreeReduce();
        }
        reduce.prepare(g, e.staging(g.transport()), e.options(), c, policy.treeBytes());
        return reduce;
    }

    public CollectiveOp barrier(Group g, Engine e, Call c) {
        if (barrier == null) {
            barrier = new DisseminationBarrier();
        }
        barrier.prepare(g, e.staging(g.transport()), e.options(), c);
        return barrier;
    }

    public CollectiveOp allToAll(Group g, Engine e, Call c) {
        if (allToAll == null) {
            allToAll = new PairwiseAllToAll();
        }
        allToAll.prepare(g, e.staging(g.transport()), e.options(), c);
        return allToAll;
    }

    public CollectiveOp pointToPoint(Group g, Engine e, Call c, boolean isSend, int peer) {
        if (p2p == null) {
            p2p = new PointToPoint();
        }
        p2p.prepare(g, e.staging(g.transport()), e.options(), c, isSend, peer);
        return p2p;
    }
}
