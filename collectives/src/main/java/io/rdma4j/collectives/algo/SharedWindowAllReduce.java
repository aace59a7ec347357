package io.rdma4j.collectives.algo;

import io.rdma4j.collectives.CollectiveMismatchException;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.Descriptor;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.core.Ops;
import io.rdma4j.collectives.core.Partition;
import io.rdma4j.nativesupport.internal.BulkCopy;
import io.rdma4j.transport.SharedWindow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * {@link io.rdma4j.collectives.Algorithm#SHARED_WINDOW}: allreduce among ranks that share memory, through
 * each rank's {@link SharedWindow} instead of messages (as Open MPI's shared-memory collectives
 * do it). A call copies the input into this rank's slot, writes the call's {@link Descriptor} in
 * front of it and release-stores the slot's sequence word; every rank then acquires every peer's
 * slot for that call and checks the peer's descriptor against its own (a mismatch fails here, on
 * every rank, before any data is used). Then one of two schemes, chosen from the size and the
 * number of ranks (so the same on every rank):
 * <ul>
 *   <li><b>Whole</b> (under {@link #SHARDED_MIN_BYTES}, with two ranks {@link
 *       #TWO_RANK_SHARDED_MIN_BYTES}): each rank reduces all slots in rank order
 *       straight into its receive buffer. One synchronization; every rank folds the same
 *       operands in the same order, so the result bits are identical everywhere.</li>
 *   <li><b>Sharded</b> (from there): reduce-scatter and
 *       allgather in place. Rank r reduces shard r of every slot into shard r of its own slot
 *       (own contribution first, then the others in rank order), publishes it with a second
 *       sequence value, and every rank copies each shard from its owner's slot. Each byte is read
 *       about three times instead of n times, and the reduction work is spread over the ranks;
 *       each shard is computed once, so every rank again gets the same bits.</li>
 * </ul>
 * A vector larger than a slot goes through the window in slot-sized pieces, one after the other,
 * each piece a call of its own for the rules below (every rank cuts the same pieces).
 *
 * <p><b>Slots and sequence values.</b> The window holds two cache-line aligned slots, used
 * alternately by the call number k (counted over this op's pieces, which every rank goes through
 * in the same order): sequence word, packed descriptor, payload (the first 32 bytes of it in the
 * header's cache line), and in the slot's last line the word a sleeping rank sets (below). The
 * sequence word says {@code 2k-1} when the input of call k is there and {@code 2k} when its
 * reduced shard is. A rank publishes call k+2
 * into the slot of call k only after it has seen every peer's input of call k+1, which each peer
 * publishes only after it has finished call k (its last read of this slot); so no slot is
 * overwritten while somebody still reads it. The shard a rank overwrites with its result is one
 * no peer reads in the first phase.
 *
 * <p><b>Waiting.</b> The {@link io.rdma4j.collectives.core.Engine} steps this op with its idle
 * strategy, abort flag and timeout; while a peer's slot is not there yet, each step also asks the
 * transport whether that peer closed, aborted or died, so a dead rank is named at once, and, for
 * a small piece, reads a word of each of the peer's payload lines ({@link #touchPayload}), so
 * that they travel beside the sequence word instead of after it. When the
 * host's ranks outnumber its cores, a rank waiting in the sharded scheme sleeps on the awaited
 * peer's sequence word ({@link #sleep}, a futex) after a short spin and yield, and every publish
 * wakes the ranks that sleep on it: a yielding rank keeps its core, so the kernel never moves the
 * runnable peer onto it (measured, 4 ranks on 2 cores, two runs each: 1 MiB 250-330 us instead
 * of 270-1060 us, 8 MiB 2.8-3.1 ms instead of 3.3-7.4 ms).
 */
public final class SharedWindowAllReduce extends CollectiveOp {
    /**
     * Below this the whole scheme's single synchronization beats the sharded one's two (4 ranks
     * on 2 cores: about equal at 16-32 KiB).
     */
    static final long SHARDED_MIN_BYTES = 64 << 10;
    /**
     * The same with two ranks, where sharding saves no reads (each rank reads both slots either
     * way). Measured with the whole scheme up to 1 MiB against this build, taking turns, three
     * passes each ({@code allreduce-perf --ranks 2 -b 32K -e 64K -f 2 -n 500 -w 100 -R 3 -p out},
     * then {@code -a window -b 64K -e 512K -n 300 -w 50}): 64 KiB whole 9.1-11.2 us against
     * sharded 9.7-10.5 (whole faster in 5 of 6 pairs), 128 KiB whole 18.3-20.4 against 17.3-20.1,
     * 512 KiB 80.1-84.0 against 70.2-74.1.
     */
    static final long TWO_RANK_SHARDED_MIN_BYTES = 128 << 10;
    private static final long SEQ = 0;
    /** The call's descriptor, packed ({@link Descriptor#writePacked}: no magic, no sender). */
    private static final long DESC = 8;
    /**
     * The payload follows the header (sequence word, packed descriptor) directly: a reader's one
     * cache-line miss on the sequence word brings the descriptor and up to 32 bytes of data too,
     * so vectors of up to 32 bytes (a few scalars: a loss, some metrics) cost the reader one line.
     */
    static final long PAYLOAD = DESC + Descriptor.PACKED_BYTES;
    private static final long SLOT_ALIGN = 64;
    /** Payload bytes in the slot's first cache line, behind the header. */
    private static final long HEAD_PAYLOAD = SLOT_ALIGN - PAYLOAD;
    /**
     * 1 + the rank whose sequence word this rank sleeps on (0: awake; see {@link #sleep}), in
     * the slot's last cache line, which no payload uses: off the line the readers poll.
     */
    private static final long SLEEPER_LINE = SLOT_ALIGN;
    /**
     * Largest piece whose payload lines a waiting reader touches ({@link #touchPayload}). 2 ranks,
     * vCPUs ~220 ns apart, passes taking turns, time per call without and with touching every
     * line: 64 B 0.46-0.49 against 0.40-0.44 us, 128 B 0.53-0.54 against 0.46, 256 B 0.55-0.58
     * against 0.49-0.51, 512 B 0.72-0.80 against 0.64-0.65 (four passes); 1 KiB 0.75-0.80
     * against 0.68-0.76, but 2 KiB 0.99-1.00 against 1.57-1.62 and 4 KiB 1.35-1.39 against
     * 2.21-2.32 (three passes): the bound stays below where the peer's copy starts to lose more
     * than the reader gains. Re-measure with {@code allreduce-perf --ranks 2 -b 32 -e 4096 -f 2
     * -p out -R 3} against a build with another bound, with the vCPUs near and far apart
     * ({@code benchmarks/c/core_latency.c}).
     */
    static final long TOUCHED_MAX_BYTES = 512;
    /** Shards are whole multiples of this (but the last), so each is whole SIMD vectors of any type. */
    private static final long SHARD_ALIGN = 64;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final SharedWindow window;
    private final Group g;
    /** Whether ranks may sleep on each other's sequence words (the host's ranks outnumber its cores). */
    private final boolean sleepers;
    private final MemorySegment[] slots;
    private final long slotBytes;
    private long calls;
    private Call c;
    private MemorySegment send;
    private MemorySegment recv;
    /** The call's vector, in bytes; it goes through the window in pieces of at most {@link #pieceBytes}. */
    private long total;
    private long pieceBytes;
    /** The current piece: its offset in the vector, bytes and elements. */
    private long pieceOff;
    private long bytes;
    private long count;
    private long base;
    private boolean sharded;
    /** Bytes per shard (the last one may be shorter or empty). */
    private long shardBytes;
    /** The sequence value peers must have reached for the current phase: 2k-1, then 2k. */
    private long awaited;
    private int next;
    private boolean done;
    /** The sum of the words {@link #touchPayload} read (unused). */
    private long touched;

    /**
     * @param sleepers whether waiting ranks may sleep ({@link #sleep}) rather than poll; then every
     *                 publish also looks for sleepers to wake. The same on every rank.
     */
    public SharedWindowAllReduce(SharedWindow window, Group g, boolean sleepers) {
        this.window = window;
        this.g = g;
        this.sleepers = sleepers;
        this.slots = new MemorySegment[g.size()];
        this.slotBytes = window.byteSize() / 2 & -SLOT_ALIGN;
    }

    /** Largest piece (bytes) that goes through the window in one go; 0 when it is too small to be of use. */
    public long capacity() {
        return Math.max(0, slotBytes - SLEEPER_LINE - PAYLOAD) & -SHARD_ALIGN;
    }

    /**
     * Prepares one call on the caller's own segments (native or heap: they are only copied from
     * and reduced into, never registered).
     */
    public void prepare(Call c, MemorySegment send, MemorySegment recv) {
        this.c = c;
        this.send = send;
        this.recv = recv;
        this.total = c.count * c.elemBytes();
        this.pieceBytes = capacity(); // a multiple of 64: of every element size too
        if (pieceBytes == 0 && total > 0) {
            throw new IllegalStateException("shared window of " + window.byteSize() + " bytes has no room for data");
        }
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
        done = false;
        startPiece(0);
    }

    /**
     * Publishes the piece at {@code off} of the vector (every rank cuts the same pieces, and each
     * is a call of its own for the slots' alternation and sequence values).
     */
    private void startPiece(long off) {
        pieceOff = off;
        bytes = Math.min(pieceBytes, total - off);
        count = bytes / c.elemBytes();
        sharded = bytes >= (g.size() == 2 ? TWO_RANK_SHARDED_MIN_BYTES : SHARDED_MIN_BYTES);
        shardBytes = Partition.ceilDiv(Partition.ceilDiv(bytes, g.size()), SHARD_ALIGN) * SHARD_ALIGN;
        calls++;
        base = (calls & 1) * slotBytes;
        MemorySegment mine = slots[g.rank()];
        // The peers poll the first line (sequence word, descriptor, the payload's head): write it
        // last and at once, so that a poll that takes the line away between two of our writes to
        // it costs one extra transfer, not one per write. The rest of the payload goes first.
        long head = Math.min(bytes, HEAD_PAYLOAD);
        if (bytes > head) {
            BulkCopy.copy(send, off + head, mine, base + PAYLOAD + head, bytes - head);
        }
        hs.writePacked(mine, base + DESC);
        if (head > 0) {
            BulkCopy.copy(send, off, mine, base + PAYLOAD, head);
        }
        awaited = 2 * calls - 1;
        publish(awaited);
        next = 0;
    }

    /**
     * Release-stores this rank's sequence word; with sleepers, then wakes the peers that sleep on
     * it. The full fence here and the one in {@link #sleep} between "I sleep on you" and the
     * re-read of the word make sure that either the publisher sees the sleeper or the sleeper
     * sees the new value (no lost wake-up; the sleep's timeout bounds anything else).
     */
    private void publish(long value) {
        MemorySegment mine = slots[g.rank()];
        LONG.setRelease(mine, base + SEQ, value);
        if (!sleepers) {
            return;
        }
        VarHandle.fullFence();
        long me = g.rank() + 1;
        for (int p = 0; p < slots.length; p++) {
            if (p != g.rank() && (long) LONG.getVolatile(slots[p], sleeperWord()) == me) {
                window.wake(base + SEQ);
                return;
            }
        }
    }

    /**
     * Sleeps (a futex on the awaited peer's sequence word) until that peer publishes, at most
     * {@code nanos}. The {@link io.rdma4j.collectives.core.Engine} calls it, instead of idling,
     * when the host is oversubscribed: a polling or yielding rank keeps its core busy, so the
     * kernel never moves the runnable peer it waits for onto that core.
     */
    @Override
    public boolean sleep(long nanos) {
        if (!sleepers || !sharded || done || next >= slots.length) {
            return false; // a small vector's wait is a few context switches: yielding serves it better
        }
        int peer = next;
        long seen = sequence(peer);
        if (seen >= awaited) {
            return true; // arrived meanwhile: the next step sees it
        }
        MemorySegment mine = slots[g.rank()];
        LONG.setVolatile(mine, sleeperWord(), (long) peer + 1);
        VarHandle.fullFence();
        try {
            return sequence(peer) != seen || window.sleepWhile(g.transportRank(peer), base + SEQ, (int) seen, nanos);
        } finally {
            LONG.setVolatile(mine, sleeperWord(), 0L);
        }
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
            if (awaited % 2 == 1 && !hs.matchesPacked(slots[next], base + DESC)) {
                throw mismatch(g, next, Descriptor.readPacked(slots[next], base + DESC));
            }
            progressed = true;
        }
        if (!sharded) {
            reduceWhole();
        } else if (awaited % 2 == 1) {
            reduceOwnShard();
            awaited++;
            publish(awaited);
            next = 0;
            step(); // the shards may all be there already
            return true; // this rank's own shard was reduced and published: progress, whatever that step found
        } else {
            gatherShards();
        }
        if (pieceOff + bytes < total) {
            startPiece(pieceOff + bytes);
            return true;
        }
        done = true;
        return true;
    }

    private void reduceWhole() {
        if (bytes > 0) {
            long off = base + PAYLOAD;
            c.reducer.reduceInto(recv, pieceOff, slots[0], off, slots[1], off, count);
            for (int r = 2; r < slots.length; r++) {
                c.reducer.reduce(recv, pieceOff, slots[r], off, count);
            }
            finish(recv, pieceOff, count);
        }
    }

    private void reduceOwnShard() {
        long lo = shardStart(g.rank());
        long len = shardStart(g.rank() + 1) - lo;
        if (len == 0) {
            return;
        }
        long n = len / c.elemBytes();
        long off = base + PAYLOAD + lo;
        MemorySegment mine = slots[g.rank()];
        for (int r = 0; r < slots.length; r++) {
            if (r != g.rank()) {
                c.reducer.reduce(mine, off, slots[r], off, n);
            }
        }
        finish(mine, off, n);
    }

    private void gatherShards() {
        for (int r = 0; r < slots.length; r++) {
            long lo = shardStart(r);
            long len = shardStart(r + 1) - lo;
            if (len > 0) {
                BulkCopy.copy(slots[r], base + PAYLOAD + lo, recv, pieceOff + lo, len);
            }
        }
    }

    private void finish(MemorySegment data, long off, long n) {
        if (c.reducer.needsFinish()) {
            c.reducer.finish(data, off, n, c.contributors);
        }
    }

    /** Byte offset of shard {@code r} in the piece (the piece's length for {@code r == size}). */
    private long shardStart(int r) {
        return Math.min(bytes, r * shardBytes);
    }

    /** Whether {@code peer} reached the awaited sequence value; checks its health while it has not. */
    private boolean arrived(int peer) {
        long seq = sequence(peer);
        if (seq >= awaited && seq <= 2 * calls) {
            return true;
        }
        touchPayload(peer);
        if (seq > 2 * calls) {
            throw new CollectiveMismatchException(g.worldRank(peer), "collective mismatch: rank "
                    + g.worldRank(g.rank()) + " is at shared-memory allreduce step #" + calls + " (" + hs + ") but rank "
                    + g.worldRank(peer) + " already published #" + (seq + 1) / 2 + " (it ran more of them)");
        }
        try {
            Ops.checkPeer(g, window, peer);
        } catch (RuntimeException e) {
            if (sequence(peer) >= awaited) {
                return true; // published, then closed its transport: its window is still mapped here
            }
            throw e;
        }
        return false;
    }

    /**
     * Reads a word of each of the awaited peer's payload lines beyond the first, while the
     * sequence word says that they are not all there yet: so that their transfers run beside
     * the sequence word's, instead of after it (the reduction's loads start only once the word
     * was seen). Only for a small whole-scheme piece ({@link #TOUCHED_MAX_BYTES}): the peer
     * writes a larger payload for longer, and a poll that takes its lines away while it writes
     * them costs it a transfer each time.
     */
    private void touchPayload(int peer) {
        if (sharded || bytes <= HEAD_PAYLOAD || bytes > TOUCHED_MAX_BYTES) {
            return;
        }
        MemorySegment s = slots[peer];
        long end = base + PAYLOAD + bytes;
        long sum = 0;
        for (long off = base + SLOT_ALIGN; off < end; off += SLOT_ALIGN) {
            sum += s.get(ValueLayout.JAVA_LONG, off);
        }
        touched = sum; // kept, so that the compiler keeps the loads
    }

    /** The current slot's sleeper word (see {@link #SLEEPER_LINE}). */
    private long sleeperWord() {
        return base + slotBytes - SLEEPER_LINE;
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
