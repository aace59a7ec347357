package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.CollectiveMismatchException;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.Descriptor;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Ops;
import io.rdma4j.transport.SharedWindow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * {@link io.rdma4j.collectives.Algorithm#SHM}: small allreduce among ranks that share memory,
 * through each rank's {@link SharedWindow} instead of messages (as Open MPI's shared-memory
 * collectives do it). A call copies the input into this rank's slot, writes the call's
 * {@link Descriptor} in front of it and release-stores the slot's sequence number; then it
 * acquires every peer's slot for that number, checks the peer's descriptor against its own (a
 * mismatch fails here, on every rank, before any data is used) and reduces all slots in rank
 * order straight into the receive buffer. Every rank folds the same operands in the same order
 * with the same kernels, so the result bits are identical everywhere.
 *
 * <p><b>Slots.</b> The window holds two cache-line aligned slots, used alternately by the call
 * number (counted over this op's calls, which every rank makes in the same order): sequence word,
 * descriptor, payload. A rank publishes call k+2 into the slot of call k only after it
 * has read every peer's call k+1, which each peer publishes only after it has finished reading
 * call k; so no slot is overwritten while somebody still reads it.
 *
 * <p><b>Waiting.</b> The {@link io.rdma4j.collectives.core.Engine} steps this op with its idle
 * strategy, abort flag and timeout; while a peer's slot is not there yet, each step also asks the
 * transport whether that peer closed, aborted or died, so a dead rank is named at once.
 */
public final class SharedWindowAllReduce extends CollectiveOp {
    private static final long SEQ = 0;
    private static final long DESC = 8;
    /**
     * The payload follows the header (sequence word and descriptor) directly: a reader's one
     * cache-line miss on the sequence word brings the descriptor and up to 24 bytes of data too.
     */
    static final long PAYLOAD = DESC + Descriptor.BYTES;
    private static final long SLOT_ALIGN = 64;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final SharedWindow window;
    private final Group g;
    private final MemorySegment[] slots;
    private final long slotBytes;
    private long calls;
    private Call c;
    private MemorySegment send;
    private MemorySegment recv;
    private long bytes;
    private long base;
    private int next;
    private boolean done;

    public SharedWindowAllReduce(SharedWindow window, Group g) {
        this.window = window;
        this.g = g;
        this.slots = new MemorySegment[g.size()];
        this.slotBytes = window.byteSize() / 2 & -SLOT_ALIGN;
    }

    /** Largest vector (bytes) a call can take; 0 when the window is too small to be of use. */
    public long capacity() {
        return Math.max(0, slotBytes - PAYLOAD);
    }

    /**
     * Prepares one call on the caller's own segments (native or heap: they are only copied from
     * and reduced into, never registered).
     */
    public void prepare(Call c, MemorySegment send, MemorySegment recv) {
        this.c = c;
        this.send = send;
        this.recv = recv;
        this.bytes = c.count * c.elemBytes();
        hs.copyFrom(c.identity);
        hs.sender = g.worldRank(g.rank());
    }

    @Override
    public Descriptor identity() {
        return c.identity;
    }

    @Override
    public void start() {
        for (int p = 0; p < slots.length; p++) {
            if (slots[p] == null) {
                slots[p] = p == g.rank() ? window.local() : Ops.window(g, window, p);
            }
        }
        calls++;
        base = (calls & 1) * slotBytes;
        MemorySegment mine = slots[g.rank()];
        hs.write(mine, base + DESC);
        if (bytes > 0) {
            MemorySegment.copy(send, 0, mine, base + PAYLOAD, bytes);
        }
        LONG.setRelease(mine, base + SEQ, calls);
        next = 0;
        done = false;
    }

    @Override
    public boolean step() {
        boolean progressed = false;
        for (; next < slots.length; next++) {
            if (next == g.rank()) {
                continue;
            }
            if (!arrived(next)) {
                return progressed;
            }
            if (!hs.matchesHeader(slots[next], base + DESC)) {
                throw mismatch(g, next, slots[next], base + DESC, Descriptor.BYTES);
            }
            progressed = true;
        }
        if (bytes > 0) {
            long off = base + PAYLOAD;
            c.reducer.reduceInto(recv, 0, slots[0], off, slots[1], off, c.count);
            for (int r = 2; r < slots.length; r++) {
                c.reducer.reduce(recv, 0, slots[r], off, c.count);
            }
            if (c.reducer.needsFinish()) {
                c.reducer.finish(recv, 0, c.count, c.contributors);
            }
        }
        done = true;
        return true;
    }

    /** Whether {@code peer} published this call; checks its health while it has not. */
    private boolean arrived(int peer) {
        long seq = sequence(peer);
        if (seq == calls) {
            return true;
        }
        if (seq > calls) {
            throw new CollectiveMismatchException(g.worldRank(peer), "collective mismatch: rank "
                    + g.worldRank(g.rank()) + " is at shared-memory allreduce #" + calls + " (" + hs + ") but rank "
                    + g.worldRank(peer) + " already published #" + seq + " (it ran more of them)");
        }
        try {
            Ops.checkPeer(g, window, peer);
        } catch (RuntimeException e) {
            if (sequence(peer) == calls) {
                return true; // published, then closed its transport: its window is still mapped here
            }
            throw e;
        }
        return false;
    }

    private long sequence(int peer) {
        return (long) LONG.getAcquire(slots[peer], base + SEQ);
    }

    @Override
    public boolean isDone() {
        return done;
    }

    @Override
    public int waitingFor() {
        return done || next >= slots.length ? -1 : g.worldRank(next);
    }
}
