package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.Descriptor;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Staging;
import io.rdma4j.transport.RegisteredBuffer;

/**
 * NCCL-style double binary tree allreduce: the first half of the vector is reduced up and
 * broadcast down tree 0, the second half over tree 1 ({@link Trees}), both pipelined in chunks
 * at the same time ({@link TreePipeline}). Since every rank is a leaf in one of the trees, each
 * rank sends and receives about as much as in one tree while the latency stays ~2 log2 n hops,
 * which beats the ring's 2(n-1) hops at small and medium sizes.
 */
public final class DoubleBinaryTreeAllReduce extends CollectiveOp {
    private final TreePipeline[] trees = {new TreePipeline(), new TreePipeline()};
    private final int[] kids = new int[2];
    private final int[] peers = new int[6];
    private int peerCount;
    private Group group;
    private Staging staging;
    private Descriptor identity;

    @Override
    public Descriptor identity() {
        return identity;
    }

    public void prepare(Group g, Staging staging, CollectiveOptions o, Call c) {
        prepare(g, staging, o, c, c.identity);
    }

    public void prepare(Group g, Staging staging, CollectiveOptions o, Call c, Descriptor handshake) {
        this.group = g;
        this.staging = staging;
        this.identity = c.identity;
        hs.copyFrom(handshake);
        int n = g.size();
        int r = g.rank();
        long half = c.count / 2;
        long per = TreePipeline.stagingBytes(o.window(), o.chunkBytes());
        RegisteredBuffer stage = staging.data(2 * per);
        peerCount = 0;
        int finishN = c.reducer.needsFinish() ? c.contributors : 0;
        for (int t = 0; t < 2; t++) {
            int parent = Trees.dtreeParent(t, r, n);
            int k = Trees.dtreeChildren(t, r, n, kids);
            long lo = t == 0 ? 0 : half;
            long len = t == 0 ? half : c.count - half;
            trees[t].configure(g, Group.LANE_DATA + t, parent, kids, k, c.reducer, finishN, c.elemBytes(),
                    c.send, c.sendOff, c.recv, c.recvOff, lo, len, stage, per * t, o.window(), o.chunkBytes());
            addPeer(parent);
            for (int i = 0; i < k; i++) {
                addPeer(kids[i]);
            }
        }
    }

    private void addPeer(int p) {
        if (p < 0) {
            return;
        }
        for (int i = 0; i < peerCount; i++) {
            if (peers[i] == p) {
                return;
            }
        }
        peers[peerCount++] = p;
    }

    @Override
    public void start() {
        beginHandshake(group, staging, peers, peerCount);
    }

    @Override
    public boolean step() {
        int before = handshakePending();
        boolean ready = handshakeReceived();
        boolean p = trees[0].step(ready);
        p |= trees[1].step(ready);
        handshakeSent();
        return p || before != handshakePending();
    }

    @Override
    public boolean isDone() {
        return handshakePending() == 0 && trees[0].isDone() && trees[1].isDone();
    }

    @Override
    public int waitingFor() {
        int w = handshakeWaitingFor();
        if (w >= 0) {
            return w;
        }
        return !trees[0].isDone() ? trees[0].waitingFor() : trees[1].waitingFor();
    }
}
