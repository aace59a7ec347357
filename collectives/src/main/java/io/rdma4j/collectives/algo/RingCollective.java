package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.Descriptor;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Partition;
import io.rdma4j.collectives.core.Staging;
import io.rdma4j.transport.RegisteredBuffer;

/**
 * Common driver of the ring collectives: descriptor handshake with both neighbours, then one
 * {@link RingPipeline} per channel (each an independent ring on its own tag lane over a slice
 * of the data), stepped together on the calling thread.
 */
abstract class RingCollective extends CollectiveOp {
    /** Below this many bytes per channel an extra channel only adds messages. */
    static final long MIN_BYTES_PER_CHANNEL = 1 << 20;

    private RingPipeline[] channels = new RingPipeline[0];
    private int active;
    private Group group;
    private final int[] peers = new int[2];
    private int peerCount;
    private Descriptor identity;
    private Staging staging;

    @Override
    public Descriptor identity() {
        return identity;
    }

    /**
     * Sets up the call: {@code total} is the number of elements the channels split (allreduce:
     * the vector; reduce-scatter/allgather: one rank's block).
     */
    final void setUp(Group g, Staging staging, CollectiveOptions o, Call c, Descriptor id, Descriptor handshake,
                     RingPipeline.Mode mode, long total, int finishN) {
        this.group = g;
        this.identity = id;
        hs.copyFrom(handshake);
        int n = g.size();
        long bytes = total * c.elemBytes();
        // the vector halves (two-hop's local hops) must leave shard r contiguous: one channel
        int channelsAllowed = mode == RingPipeline.Mode.VECTOR_REDUCE_SCATTER || mode == RingPipeline.Mode.VECTOR_ALL_GATHER
                ? 1 : o.channels();
        int wanted = (int) Math.max(1, Math.min(channelsAllowed, bytes / MIN_BYTES_PER_CHANNEL));
        if (channels.length < wanted) {
            RingPipeline[] a = new RingPipeline[wanted];
            System.arraycopy(channels, 0, a, 0, channels.length);
            for (int i = channels.length; i < wanted; i++) {
                a[i] = new RingPipeline();
            }
            channels = a;
        }
        active = wanted;
        long chunk = o.chunkBytes();
        long perChannel = RingPipeline.stagingBytes(mode, o.window(), chunk);
        RegisteredBuffer stage = perChannel == 0 ? null : staging.data(perChannel * wanted);
        for (int ch = 0; ch < wanted; ch++) {
            long lo = Partition.start(total, wanted, ch);
            long len = Partition.start(total, wanted, ch + 1) - lo;
            channels[ch].configure(g, Group.LANE_DATA + ch, mode, c.reducer, finishN, c.elemBytes(),
                    c.send, c.sendOff, c.recv, c.recvOff, lo, len, c.count,
                    stage, perChannel * ch, o.window(), chunk);
        }
        int left = (g.rank() - 1 + n) % n;
        int right = (g.rank() + 1) % n;
        peers[0] = left;
        peers[1] = right;
        peerCount = left == right ? 1 : 2;
        this.staging = staging;
    }

    @Override
    public void start() {
        beginHandshake(group, staging, peers, peerCount);
    }

    @Override
    public boolean step() {
        int before = handshakePending();
        boolean ready = handshakeReceived();
        boolean progressed = false;
        for (int i = 0; i < active; i++) {
            progressed |= channels[i].step(ready);
        }
        handshakeSent();
        return progressed || handshakePending() != before;
    }

    @Override
    public boolean isDone() {
        if (handshakePending() != 0) {
            return false;
        }
        for (int i = 0; i < active; i++) {
            if (!channels[i].isDone()) {
                return false;
            }
        }
        return true;
    }

    @Override
    public int waitingFor() {
        int w = handshakeWaitingFor();
        if (w >= 0) {
            return w;
        }
        for (int i = 0; i < active; i++) {
            if (!channels[i].isDone()) {
                return channels[i].waitingFor();
            }
        }
        return -1;
    }
}
