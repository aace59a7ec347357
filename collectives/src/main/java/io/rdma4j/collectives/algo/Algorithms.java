package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.Algorithm;
import io.rdma4j.collectives.AlgorithmPolicy;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.Engine;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.transport.SharedWindow;

import java.lang.foreign.MemorySegment;

/**
 * One reusable instance of every algorithm for a communicator (a communicator runs one
 * collective at a time), prepared for each call; which one runs is {@link AlgorithmPolicy}'s
 * choice.
 */
public final class Algorithms {
    private final AlgorithmPolicy policy;
    /** The allreduce through shared windows; null unless the communicator has a window. */
    private final SharedWindowAllReduce window;
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

    /**
     * @param window   the communicator's shared window (a world communicator of several ranks on
     *                 the shm provider), else null
     * @param group    the communicator's group
     * @param sleepers whether ranks waiting in the window may sleep (see {@link SharedWindowAllReduce})
     */
    public Algorithms(AlgorithmPolicy policy, SharedWindow window, Group group, boolean sleepers) {
        this.policy = policy;
        this.window = window == null ? null : new SharedWindowAllReduce(window, group, sleepers);
    }

    /** Payload capacity of the shared window in one piece; 0 without one. */
    public long windowBytes() {
        return window == null ? 0 : window.capacity();
    }

    /**
     * Whether allreduce {@code a} works on the call's registered buffers ({@link Call#send},
     * {@link Call#recv}); the shared-window one copies from and reduces into the caller's
     * segments as they are, so nothing is bound for it.
     */
    public static boolean usesRegisteredBuffers(Algorithm a) {
        return a != Algorithm.SHARED_WINDOW;
    }

    /**
     * Allreduce {@code a} prepared for {@code c} on {@code g} (two-hop: on {@code h});
     * {@code send}/{@code recv} are the caller's segments, read only by the algorithms that do
     * not {@linkplain #usesRegisteredBuffers use registered buffers}.
     */
    public CollectiveOp allReduce(Algorithm a, Group g, Hierarchy h, Engine e, Call c, MemorySegment send,
                                  MemorySegment recv) {
        return switch (a) {
            case RING -> ring(g, e, c);
            case TREE -> tree(g, e, c);
            case RHD -> rhd(g, e, c);
            case TWO_HOP -> twoHop(h, e, c);
            case SHARED_WINDOW -> {
                window.prepare(c, send, recv);
                yield window;
            }
        };
    }

    private CollectiveOp ring(Group g, Engine e, Call c) {
        if (ring == null) {
            ring = new RingAllReduce();
        }
        ring.prepare(g, e.staging(g.transport()), e.options(), c);
        return ring;
    }

    private CollectiveOp tree(Group g, Engine e, Call c) {
        if (tree == null) {
            tree = new DoubleBinaryTreeAllReduce();
        }
        tree.prepare(g, e.staging(g.transport()), e.options(), c);
        return tree;
    }

    private CollectiveOp rhd(Group g, Engine e, Call c) {
        if (policy.recursiveDoubling(c.count * c.elemBytes(), g.size())) {
            if (rd == null) {
                rd = new RecursiveDoublingAllReduce();
            }
            rd.prepare(g, e.staging(g.transport()), c);
            return rd;
        }
        if (rhd == null) {
            rhd = new RecursiveHalvingDoublingAllReduce();
        }
        rhd.prepare(g, e.staging(g.transport()), e.options(), c, policy.doublingBytes(g.size()));
        return rhd;
    }

    private CollectiveOp twoHop(Hierarchy h, Engine e, Call c) {
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
