package io.rdma4j.transport.shm;

import io.rdma4j.nativesupport.internal.BulkCopy;
import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.internal.TransportState;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The shared-memory connection between this rank and one peer: the protocol engine of both
 * directions.
 *
 * <p><b>Inbound</b> (peer to us) lives in our control file, area {@code peer}: we publish a
 * clear-to-send (CTS) entry per {@link #irecv} (tag, capacity, request id, and either the region
 * and offset of the target when it lies in our shared memory, or "bounce"); the peer answers on
 * the event ring. <b>Outbound</b> (us to peer) is the mirror image in the peer's file.
 *
 * <p>Two-sided data path, chosen by the receiver's target:
 * <ul>
 *   <li><i>direct</i> (target is shared memory, from {@code allocate()}): the sender checks the
 *       target against the receiver's region table, copies straight into it and publishes a DONE
 *       event - one copy;</li>
 *   <li><i>bounce</i> (target is private memory from {@code register()}): the sender streams the
 *       data through the receiver's bounce chunks (a ring of {@code chunkCount} chunks, credits
 *       returned by the receiver's chunk counter), the receiver copies each chunk out - two copies,
 *       pipelined between the two processes.</li>
 * </ul>
 * A send waits (as a pending request, never blocking) for its CTS, so a receiver is never
 * overrun. Sends are matched to CTS entries per tag in post order on both sides; matched sends
 * are transferred in match order, so messages of one tag arrive in the order sent.
 *
 * <p><i>Eager</i>: a send of up to {@link #EAGER_BYTES} does not wait for its CTS. It goes
 * whole into one event entry (header and payload in one cache line, which is all the receiver
 * fetches), and the receiver hands it to the oldest receive of its tag that no message has
 * claimed, or keeps it ({@link EarlyMessages}) until one is posted. Its receive's CTS still
 * comes, is matched like any other, and completes the send, so a send still completes only once
 * a receive took it, and one larger than its receive fails on both sides. On a ping-pong the
 * CTS, which the peer writes just before its answer, is then no longer fetched between the
 * answer and the next message.
 *
 * <p>One-sided {@link #write}/{@link #read} copy directly between the local buffer and the
 * peer's mapped slab after resolving the descriptor in the peer's region table; the immediate of
 * a write is published on the peer's immediate ring after the data (the release-store of the
 * entry's sequence word orders it after the copy). They take effect in post order, as on an RC
 * queue pair: while a write waits for room in the immediate ring, later writes and reads wait
 * behind it.
 *
 * <p>Everything the peer writes into our memory (ring counters and sequence words, CTS entries,
 * event fields) is validated before use; a violation fails this connection, never writes out of
 * bounds.
 */
final class ShmConnection implements Connection {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final long LIVENESS_INTERVAL_NANOS = 10_000_000;

    static final int KIND_BOUNCE = 0;
    static final int KIND_DIRECT = 1;

    private static final long CTS_RECV_ID = 0;
    private static final long CTS_CAPACITY = 8;
    private static final long CTS_TAG = 16;
    private static final long CTS_KIND = 20;
    private static final long CTS_REGION = 24;
    private static final long CTS_ADDRESS = 32;
    private static final int CTS_SEQUENCE = 40;

    private static final int EV_DONE = 1;
    private static final int EV_CHUNK = 2;
    private static final int EV_LAST_CHUNK = 3;
    private static final int EV_TOO_LONG = 4;
    private static final int EV_BAD_TARGET = 5;
    /** A whole small message, sent before (or without looking for) its receive's CTS. */
    private static final int EV_EAGER = 6;
    private static final long EV_RECV_ID = 0;
    private static final long EV_LENGTH = 8;
    private static final long EV_TYPE = 16;
    private static final int EV_SEQUENCE = 20;
    private static final long EV_AUX = 24;
    /** An eager event: its tag where others carry the receive, its payload where others carry aux. */
    private static final long EV_EAGER_TAG = EV_RECV_ID;
    private static final long EV_PAYLOAD = EV_AUX;
    /** The largest message sent eagerly: what fits in an event entry behind its header. */
    static final int EAGER_BYTES = ShmLayout.EVENT_ENTRY - (int) EV_PAYLOAD;
    /** Eager sends that may wait for their receive at once, which bounds the receiver's {@link EarlyMessages}. */
    static final int EAGER_CREDITS = 64;
    /** An immediate entry: the 32-bit value, then the ring's sequence word. */
    private static final long IMM_VALUE = 0;
    private static final int IMM_SEQUENCE = 4;

    private final ShmTransport transport;
    private final RequestTable requests;
    private final int rank;
    private final int peer;
    private final PeerMapping remote;

    // Inbound: peer -> us, in our control file.
    private final MemorySegment inFile;
    private final SpscRing ctsOut;
    private final SpscRing eventsIn;
    private final SpscRing immIn;
    private final long inChunksFreed;
    /** Where this side tells the peer it dropped the connection ({@link ShmLayout#AREA_DROPPED}). */
    private final long inDropped;
    private final long inBounce;
    private final int inChunkCount;
    private final long inChunkSize;
    private long chunksCopied;

    // Outbound: us -> peer, in the peer's control file.
    private final MemorySegment outFile;
    private final SpscRing ctsIn;
    private final SpscRing eventsOut;
    private final SpscRing immOut;
    private final long outChunksFreed;
    /** Where the peer tells this side it dropped the connection. */
    private final long outDropped;
    private final long outBounce;
    private final int outChunkCount;
    private final long outChunkSize;
    private long chunksWritten;
    private long chunksFreedSeen;

    private final CtsQueue cts;
    private final SlotQueue unmatchedSends;
    private final SlotQueue activeSends;
    private final SlotQueue oneSided;
    private boolean matchNeeded;
    /** Rendezvous sends not yet wholly written: while any is, later sends may not go eagerly. */
    private int rendezvousSends;
    /** Eager sends whose receive's CTS has not come yet. */
    private int eagerSends;
    private boolean lastSendEager;

    // Receiving: CTS entries the ring had no room for yet, receives no send has claimed yet, and
    // eager messages that came before their receive.
    private final CtsQueue unpublishedCts;
    private final SlotQueue unclaimedReceives;
    private final EarlyMessages early;

    private String failure;
    private Throwable failureCause;
    /** Whether the bounce chunks of the peer's area in this rank's file have memory. */
    private boolean bounceBacked;
    private long nextLivenessCheck;
    private int passes;

    ShmConnection(ShmTransport transport, RequestTable requests, MemorySegment ownFile, ShmLayout own, PeerMapping remote) {
        this.transport = transport;
        this.requests = requests;
        this.rank = own.rank;
        this.remote = remote;
        this.peer = remote.info.rank();

        inFile = ownFile;
        long in = own.area(peer);
        ctsOut = new SpscRing(inFile, in + own.ctsRingOffset, own.ctsCapacity, ShmLayout.CTS_ENTRY, CTS_SEQUENCE);
        eventsIn = new SpscRing(inFile, in + own.eventRingOffset, own.eventCapacity, ShmLayout.EVENT_ENTRY, EV_SEQUENCE);
        immIn = new SpscRing(inFile, in + own.immRingOffset, own.immCapacity, ShmLayout.IMM_ENTRY, IMM_SEQUENCE);
        inChunksFreed = in + ShmLayout.AREA_CHUNKS_FREED;
        inDropped = in + ShmLayout.AREA_DROPPED;
        inBounce = in + own.bounceOffset;
        inChunkCount = own.chunkCount;
        inChunkSize = own.chunkSize;

        ShmLayout theirs = remote.layout;
        outFile = remote.control();
        long out = theirs.area(rank);
        ctsIn = new SpscRing(outFile, out + theirs.ctsRingOffset, theirs.ctsCapacity, ShmLayout.CTS_ENTRY, CTS_SEQUENCE);
        eventsOut = new SpscRing(outFile, out + theirs.eventRingOffset, theirs.eventCapacity, ShmLayout.EVENT_ENTRY, EV_SEQUENCE);
        immOut = new SpscRing(outFile, out + theirs.immRingOffset, theirs.immCapacity, ShmLayout.IMM_ENTRY, IMM_SEQUENCE);
        outChunksFreed = out + ShmLayout.AREA_CHUNKS_FREED;
        outDropped = out + ShmLayout.AREA_DROPPED;
        outBounce = out + theirs.bounceOffset;
        outChunkCount = theirs.chunkCount;
        outChunkSize = theirs.chunkSize;

        // The peer may have every one of its requests posted as a receive to us, and a send may
        // need a CTS behind any number of unmatched ones: hold them all rather than deadlock.
        cts = new CtsQueue(64, theirs.requestCapacity);
        unmatchedSends = new SlotQueue(requests.next);
        activeSends = new SlotQueue(requests.next);
        oneSided = new SlotQueue(requests.next);
        unpublishedCts = new CtsQueue(64, own.requestCapacity);
        unclaimedReceives = new SlotQueue(requests.next);
        early = new EarlyMessages(EAGER_CREDITS, EAGER_BYTES);
    }

    @Override
    public int peer() {
        return peer;
    }

    PeerMapping remote() {
        return remote;
    }

    // ---------------------------------------------------------------- operations

    @Override
    public long isend(RegisteredBuffer source, long offset, long length, int tag) {
        ShmRegistration src = transport.usable(source, "isend source");
        checkRange(src, offset, length, "isend");
        checkOpen();
        int slot = acquire(RequestTable.SEND, tag, src.segment, offset, length);
        try {
            lastSendEager = sendEagerly(slot);
        } catch (RuntimeException e) {
            throw abandon(slot, src.segment, e);
        }
        if (!lastSendEager) {
            rendezvousSends++;
        }
        unmatchedSends.add(slot);
        matchNeeded = true;
        progress(); // latency: a receive that is already posted gets the data right away
        return requests.id(slot);
    }

    /**
     * Writes a small send into the peer's event ring at once, header and payload in one entry,
     * when that keeps every tag's messages in order: no earlier rendezvous send is still being
     * written (the receiver pairs an eager message with the oldest receive of its tag that no
     * earlier message claimed, so those claims must be in the ring before it), fewer than
     * {@link #EAGER_CREDITS} eager sends wait for their receive, and the ring has room. The send
     * still completes only with its receive's CTS, as a rendezvous send does.
     */
    private boolean sendEagerly(int s) {
        long length = requests.length[s];
        if (length > EAGER_BYTES || rendezvousSends > 0 || eagerSends >= EAGER_CREDITS) {
            return false;
        }
        long e = eventsOut.claim();
        if (e < 0) {
            return false;
        }
        MemorySegment.copy(requests.segment[s], requests.segmentOffset[s], outFile, e + EV_PAYLOAD, length);
        outFile.set(ValueLayout.JAVA_LONG, e + EV_EAGER_TAG, requests.tag[s]);
        outFile.set(ValueLayout.JAVA_LONG, e + EV_LENGTH, length);
        outFile.set(ValueLayout.JAVA_INT, e + EV_TYPE, EV_EAGER);
        eventsOut.publish();
        requests.placed[s] = true;
        eagerSends++;
        return true;
    }

    @Override
    public long irecv(RegisteredBuffer target, long offset, long capacity, int tag) {
        ShmRegistration dst = transport.usable(target, "irecv target");
        checkRange(dst, offset, capacity, "irecv");
        TransportState.checkWritable(dst.segment, "irecv target");
        checkOpen();
        boolean direct = dst.regionKey() != 0;
        if (!direct && !bounceBacked) {
            // before the first CTS that lets the peer write them: a write into a page that the
            // full tmpfs cannot give would kill the peer's process with SIGBUS
            MappedFile.backWithMemory(inFile.asSlice(inBounce, inChunkCount * inChunkSize), transport.directory(), rank,
                    () -> "the bounce chunks for messages from peer " + peer);
            bounceBacked = true;
        }
        int slot = acquire(RequestTable.RECV, tag, dst.segment, offset, capacity);
        try {
            offer(slot, direct ? dst.regionKey() : 0, direct ? dst.slabAddress() + offset : 0);
        } catch (RuntimeException e) {
            throw abandon(slot, dst.segment, e);
        }
        return requests.id(slot);
    }

    /**
     * Queues the CTS of receive {@code slot} ({@code region} 0: through the bounce chunks) and
     * hands the receive the oldest eager message of its tag that came before it.
     */
    private void offer(int slot, long region, long address) {
        int tag = requests.tag[slot];
        // The CTS goes out even for a message that is already here: it completes the peer's send.
        unpublishedCts.add(requests.id(slot), requests.length[slot], tag, region != 0 ? KIND_DIRECT : KIND_BOUNCE,
                region, address);
        int m = early.oldest(tag);
        if (m >= 0) {
            deliverEarly(slot, m);
            publishReceives(); // now: nothing may wait for a poll of ours to complete the peer's send
        } else {
            unclaimedReceives.add(slot);
            // While this side sends small messages, the CTS of a receive that still waits waits
            // too, for the next progress pass (the poll that completes the receive is one): a peer
            // exchanging small messages with us waits for our next message, and a CTS written
            // just before it would be one more line to move first. An eager isend writes its
            // message before that pass.
            if (!lastSendEager) {
                publishReceives();
            }
        }
    }

    /** Publishes CTS entries for posted receives, oldest first, while the CTS ring has room. */
    private int publishReceives() {
        int work = 0;
        for (int q = unpublishedCts.first(); q >= 0; q = unpublishedCts.first()) {
            long e = ctsOut.claim();
            if (e < 0) {
                break;
            }
            inFile.set(ValueLayout.JAVA_LONG, e + CTS_RECV_ID, unpublishedCts.recvId(q));
            inFile.set(ValueLayout.JAVA_LONG, e + CTS_CAPACITY, unpublishedCts.capacity(q));
            inFile.set(ValueLayout.JAVA_INT, e + CTS_TAG, unpublishedCts.tag(q));
            inFile.set(ValueLayout.JAVA_INT, e + CTS_KIND, unpublishedCts.kind(q));
            inFile.set(ValueLayout.JAVA_LONG, e + CTS_REGION, unpublishedCts.region(q));
            inFile.set(ValueLayout.JAVA_LONG, e + CTS_ADDRESS, unpublishedCts.address(q));
            ctsOut.publish();
            unpublishedCts.removeFirst();
            work++;
        }
        return work;
    }

    private void deliverEarly(int slot, int m) {
        deliverEager(slot, early.payloads(), early.offset(m), early.length(m));
        early.remove(m);
    }

    /** Completes a receive with an eager message's bytes, or fails it when they do not fit. */
    private void deliverEager(int slot, MemorySegment from, long offset, long length) {
        if (length > requests.length[slot]) {
            failTooLong(slot, length);
        } else {
            MemorySegment.copy(from, offset, requests.segment[slot], requests.segmentOffset[slot], length);
            requests.complete(slot, length);
        }
    }

    private void failTooLong(int slot, long sent) {
        requests.fail(slot, "peer " + peer + " sent " + sent + " bytes under tag " + requests.tag[slot]
                + ", more than the " + requests.length[slot] + " bytes this irecv offered", null);
    }

    /** An eager message: to the oldest receive of its tag that no message claimed, or kept until one is posted. */
    private void receiveEager(long e) {
        long tagWord = inFile.get(ValueLayout.JAVA_LONG, e + EV_EAGER_TAG);
        long length = inFile.get(ValueLayout.JAVA_LONG, e + EV_LENGTH);
        if (length < 0 || length > EAGER_BYTES || tagWord != (int) tagWord) {
            throw new ProtocolViolation("eager message of " + length + " bytes under tag " + tagWord
                    + " (at most " + EAGER_BYTES + " bytes)");
        }
        int tag = (int) tagWord;
        int previous = -1;
        for (int r = unclaimedReceives.first(); r >= 0; previous = r, r = unclaimedReceives.next(r)) {
            if (requests.tag[r] == tag) {
                unclaimedReceives.remove(r, previous);
                deliverEager(r, inFile, e + EV_PAYLOAD, length);
                return;
            }
        }
        if (!early.add(tag, inFile, e + EV_PAYLOAD, (int) length)) {
            throw new ProtocolViolation("more than " + EAGER_CREDITS + " eager messages before their receives");
        }
    }

    @Override
    public long write(RegisteredBuffer source, long sourceOffset, RemoteBuffer target, long targetOffset,
                      long length, long immediate) {
        ShmRegistration src = transport.usable(source, "write source");
        checkRange(src, sourceOffset, length, "write");
        if (immediate != NO_IMMEDIATE && (immediate < 0 || immediate > 0xFFFF_FFFFL)) {
            throw new IllegalArgumentException("immediate " + immediate + " is not an unsigned 32-bit value");
        }
        checkHealthy(); // a closed peer's regions still resolve: its table is not cleared at close
        MemorySegment dst = resolve(target, targetOffset, length, "write");
        int slot = acquire(RequestTable.WRITE, 0, src.segment, sourceOffset, length);
        requests.remote[slot] = dst;
        requests.remoteAddress[slot] = target.address() + targetOffset;
        requests.remoteKey[slot] = target.key();
        requests.immediate[slot] = immediate;
        return runPosted(slot, src.segment);
    }

    @Override
    public long read(RegisteredBuffer target, long targetOffset, RemoteBuffer source, long sourceOffset, long length) {
        ShmRegistration dst = transport.usable(target, "read target");
        checkRange(dst, targetOffset, length, "read");
        TransportState.checkWritable(dst.segment, "read target");
        checkHealthy();
        MemorySegment src = resolve(source, sourceOffset, length, "read");
        int slot = acquire(RequestTable.READ, 0, dst.segment, targetOffset, length);
        requests.remote[slot] = src;
        requests.remoteAddress[slot] = source.address() + sourceOffset;
        requests.remoteKey[slot] = source.key();
        requests.immediate[slot] = NO_IMMEDIATE;
        return runPosted(slot, dst.segment);
    }

    /**
     * Queues write or read {@code slot}, whose buffer on this side is {@code local}, behind the
     * earlier ones and runs what can run now.
     */
    private long runPosted(int slot, MemorySegment local) {
        oneSided.add(slot);
        try {
            runOneSided();
        } catch (RuntimeException e) {
            throw abandon(slot, local, e);
        }
        return requests.id(slot);
    }

    /**
     * Executes queued writes and reads in post order; stops at a write whose immediate finds the
     * peer's immediate ring full (the peer has not polled), so nothing overtakes it.
     */
    private int runOneSided() {
        int work = 0;
        for (int s = oneSided.first(); s >= 0; s = oneSided.first()) {
            if (!requests.placed[s]) {
                if (remote.regions.resolve(requests.remoteKey[s], requests.remoteAddress[s], requests.length[s]) < 0) {
                    // queued behind a full immediate ring while the peer freed the region: the
                    // memory may be another buffer's by now (a NIC would see an invalid key)
                    oneSided.remove(s, -1);
                    requests.fail(s, "peer " + peer + " closed the remote buffer before the data could be copied", null);
                    work++;
                    continue;
                }
                if (requests.kind[s] == RequestTable.WRITE) {
                    // Release: the caller's earlier stores (e.g. into the source) are not reordered
                    // after the copy.
                    VarHandle.releaseFence();
                    BulkCopy.copy(requests.segment[s], requests.segmentOffset[s], requests.remote[s],
                            requests.remoteAddress[s], requests.length[s]);
                } else {
                    // Acquire: not read ahead of whatever told the caller the data was ready.
                    VarHandle.acquireFence();
                    BulkCopy.copy(requests.remote[s], requests.remoteAddress[s], requests.segment[s],
                            requests.segmentOffset[s], requests.length[s]);
                }
                requests.placed[s] = true;
            }
            if (requests.immediate[s] != NO_IMMEDIATE) {
                long e = immOut.claim();
                if (e < 0) {
                    break;
                }
                outFile.set(ValueLayout.JAVA_INT, e + IMM_VALUE, (int) requests.immediate[s]);
                immOut.publish(); // release: the data copied above is visible before the immediate
            }
            oneSided.remove(s, -1);
            requests.complete(s, requests.length[s]);
            work++;
        }
        return work;
    }

    @Override
    public long pollImmediate() {
        synchronized (transport) { // as every poll: a close from another thread waits for it
            transport.checkNotClosed(); // values that arrived before a failure or abort are still taken
            transport.progressAll();
            long e = immIn.peek();
            if (e >= 0) {
                long value = Integer.toUnsignedLong(inFile.get(ValueLayout.JAVA_INT, e + IMM_VALUE));
                immIn.release();
                return value;
            }
            if (failure != null) {
                throw new TransportException(peer, "shm rank " + rank + ": no immediate can arrive from peer " + peer
                        + " any more: " + failure, failureCause);
            }
            return NO_IMMEDIATE;
        }
    }

    @Override
    public void flush() {
        // Copies happen when posted or in progress(); there is no batch to hand over, but a flush
        // is where a caller expects progress.
        synchronized (transport) { // as every poll: a close from another thread waits for it
            checkOpen();
            transport.progressAll();
        }
    }

    // ---------------------------------------------------------------- progress

    /** One round of both directions plus the peer's liveness; returns the work done. */
    int progress() {
        if (failure != null) {
            return 0;
        }
        try {
            int work = progressInbound() + progressOutbound();
            checkPeer();
            return work;
        } catch (RuntimeException e) {
            // whatever a copy or mapping for this peer threw fails this connection alone: thrown
            // on, it would end every later progress pass of the transport before the other
            // connections' turn, and every test or await of any peer would rethrow it
            dropAfter(e);
            return 1;
        }
    }

    /** Drops the connection after what a pass over it threw. */
    private void dropAfter(RuntimeException e) {
        drop("shm connection rank " + rank + " <-> peer " + peer + " failed: " + e, e);
    }

    private int progressInbound() {
        int work = publishReceives();
        for (long e = eventsIn.peek(); e >= 0; e = eventsIn.peek()) {
            int type = inFile.get(ValueLayout.JAVA_INT, e + EV_TYPE);
            if (type == EV_EAGER) {
                receiveEager(e);
                eventsIn.release();
                work++;
                continue;
            }
            long recvId = inFile.get(ValueLayout.JAVA_LONG, e + EV_RECV_ID);
            long length = inFile.get(ValueLayout.JAVA_LONG, e + EV_LENGTH);
            long aux = inFile.get(ValueLayout.JAVA_LONG, e + EV_AUX);
            int slot = requests.slot(recvId);
            if (slot < 0 || requests.kind[slot] != RequestTable.RECV || requests.peer[slot] != peer
                    || !requests.pending(slot)) {
                throw new ProtocolViolation("event " + type + " for request " + recvId + ", which is no pending irecv from peer " + peer);
            }
            if (requests.transferred[slot] == 0) {
                // A rendezvous event names its receive: from its first one on, no eager message may take it.
                unclaimedReceives.removeIfPresent(slot);
            }
            switch (type) {
                case EV_DONE -> {
                    if (length < 0 || length > requests.length[slot]) {
                        throw new ProtocolViolation("DONE of " + length + " bytes for an irecv of " + requests.length[slot]);
                    }
                    requests.complete(slot, length);
                }
                case EV_CHUNK, EV_LAST_CHUNK -> copyChunkOut(slot, length, type == EV_LAST_CHUNK);
                case EV_TOO_LONG -> failTooLong(slot, aux);
                case EV_BAD_TARGET -> requests.fail(slot, "peer " + peer + " refused to write " + length
                        + " bytes into this irecv's target: region key " + aux + " is not (any longer) registered", null);
                default -> throw new ProtocolViolation("unknown event type " + type);
            }
            eventsIn.release();
            work++;
        }
        return work;
    }

    private void copyChunkOut(int slot, long length, boolean last) {
        long received = requests.transferred[slot];
        if (length < 0 || length > inChunkSize || length > requests.length[slot] - received) {
            throw new ProtocolViolation("chunk of " + length + " bytes after " + received + " for an irecv of "
                    + requests.length[slot] + " (chunk size " + inChunkSize + ")");
        }
        long from = inBounce + (chunksCopied % inChunkCount) * inChunkSize;
        BulkCopy.copy(inFile, from, requests.segment[slot], requests.segmentOffset[slot] + received, length);
        chunksCopied++;
        LONG.setRelease(inFile, inChunksFreed, chunksCopied);
        requests.transferred[slot] = received + length;
        if (last) {
            requests.complete(slot, received + length);
        }
    }

    private int progressOutbound() {
        int work = 0;
        // After an eager send, only for a send that waits for a CTS: the peer writes its CTS just
        // before the message it answers with, and a pass that fetched that line first would hand
        // the message on later. After a rendezvous send, ahead of need.
        if (!unmatchedSends.isEmpty() || !lastSendEager) {
            work += takeCts();
        }
        matchIfNeeded();
        for (int s = activeSends.first(); s >= 0 && transfer(s); s = activeSends.first()) {
            activeSends.remove(s, -1);
            work++;
        }
        return work + runOneSided();
    }

    /** Moves the peer's CTS entries into {@link #cts} while it has room; returns how many. */
    private int takeCts() {
        int work = 0;
        for (long e; cts.hasRoom() && (e = ctsIn.peek()) >= 0; work++) {
            long recvId = outFile.get(ValueLayout.JAVA_LONG, e + CTS_RECV_ID);
            long capacity = outFile.get(ValueLayout.JAVA_LONG, e + CTS_CAPACITY);
            int tag = outFile.get(ValueLayout.JAVA_INT, e + CTS_TAG);
            int kind = outFile.get(ValueLayout.JAVA_INT, e + CTS_KIND);
            if (capacity < 0 || (kind != KIND_DIRECT && kind != KIND_BOUNCE)) {
                throw new ProtocolViolation("malformed CTS entry: capacity " + capacity + ", kind " + kind);
            }
            cts.add(recvId, capacity, tag, kind, outFile.get(ValueLayout.JAVA_LONG, e + CTS_REGION),
                    outFile.get(ValueLayout.JAVA_LONG, e + CTS_ADDRESS));
            ctsIn.release();
            matchNeeded = true;
        }
        return work;
    }

    /**
     * After the peer closed cleanly: an eager send whose message the peer had and whose receive's
     * CTS it wrote before closing was received, so it completes; a send the peer took no data of
     * is left to fail. The CTS may arrive together with the close, after this side's last pass.
     */
    private void completeSendsThePeerReceived() {
        takeCts();
        matchIfNeeded();
        for (int s = activeSends.first(), previous = -1; s >= 0; ) {
            int after = activeSends.next(s);
            if (requests.placed[s]) {
                activeSends.remove(s, previous);
                transfer(s);
            } else {
                previous = s;
            }
            s = after;
        }
    }

    /** {@link #match} when a send or a CTS entry came since the last one. */
    private void matchIfNeeded() {
        if (matchNeeded) {
            matchNeeded = false;
            match();
        }
    }

    /** Pairs sends with CTS entries: per tag, the k-th send with the k-th receive. */
    private void match() {
        int previous = -1;
        for (int s = unmatchedSends.first(); s >= 0 && !cts.isEmpty(); ) {
            int after = unmatchedSends.next(s);
            if (cts.takeInto(requests.tag[s], requests, s)) {
                unmatchedSends.remove(s, previous);
                activeSends.add(s);
            } else {
                previous = s;
            }
            s = after;
        }
    }

    /** Moves a matched send forward; true once it completed or failed. */
    private boolean transfer(int s) {
        if (requests.placed[s]) {
            // Eager: the message is in the peer's memory; its receive's CTS completes it.
            eagerSends--;
            if (requests.length[s] > requests.ctsCapacity[s]) {
                failOfferedOnly(s);
            } else {
                requests.complete(s, requests.length[s]);
            }
            return true;
        }
        if (transferRendezvous(s)) {
            rendezvousSends--;
            return true;
        }
        return false;
    }

    private void failOfferedOnly(int s) {
        requests.fail(s, "the matching irecv of peer " + peer + " offered only " + requests.ctsCapacity[s] + " bytes", null);
    }

    private boolean transferRendezvous(int s) {
        long length = requests.length[s];
        long recvId = requests.ctsRecvId[s];
        if (length > requests.ctsCapacity[s]) {
            long e = eventsOut.claim();
            if (e < 0) {
                return false;
            }
            postEvent(e, recvId, EV_TOO_LONG, requests.ctsCapacity[s], length);
            failOfferedOnly(s);
            return true;
        }
        if (length == 0 || requests.ctsKind[s] == KIND_DIRECT) {
            return transferDirect(s, length, recvId);
        }
        while (requests.transferred[s] < length) {
            if (chunksWritten - chunksFreedSeen >= outChunkCount) {
                chunksFreedSeen = (long) LONG.getAcquire(outFile, outChunksFreed);
                if (chunksFreedSeen > chunksWritten || chunksFreedSeen < chunksWritten - outChunkCount) {
                    throw new ProtocolViolation("bounce credit counter " + chunksFreedSeen + " with " + chunksWritten + " chunks sent");
                }
                if (chunksWritten - chunksFreedSeen >= outChunkCount) {
                    return false;
                }
            }
            long e = eventsOut.claim();
            if (e < 0) {
                return false;
            }
            long sent = requests.transferred[s];
            long n = Math.min(outChunkSize, length - sent);
            long to = outBounce + (chunksWritten % outChunkCount) * outChunkSize;
            BulkCopy.copy(requests.segment[s], requests.segmentOffset[s] + sent, outFile, to, n);
            chunksWritten++;
            requests.transferred[s] = sent + n;
            postEvent(e, recvId, sent + n == length ? EV_LAST_CHUNK : EV_CHUNK, n, 0);
        }
        requests.complete(s, length);
        return true;
    }

    private boolean transferDirect(int s, long length, long recvId) {
        long e = eventsOut.claim();
        if (e < 0) {
            return false;
        }
        if (length > 0) {
            long address = requests.ctsAddress[s];
            long region = requests.ctsRegion[s];
            MemorySegment target = peerSlab(remote.regions.resolve(region, address, length), address, length);
            if (target == null) {
                postEvent(e, recvId, EV_BAD_TARGET, length, region);
                requests.fail(s, "the matching irecv of peer " + peer + " names region key " + region + " at "
                        + address + " (+" + length + " bytes), which peer " + peer + " has not registered", null);
                return true;
            }
            BulkCopy.copy(requests.segment[s], requests.segmentOffset[s], target, address, length);
        }
        postEvent(e, recvId, EV_DONE, length, 0);
        requests.complete(s, length);
        return true;
    }

    private void postEvent(long e, long recvId, int type, long length, long aux) {
        outFile.set(ValueLayout.JAVA_LONG, e + EV_RECV_ID, recvId);
        outFile.set(ValueLayout.JAVA_LONG, e + EV_LENGTH, length);
        outFile.set(ValueLayout.JAVA_INT, e + EV_TYPE, type);
        outFile.set(ValueLayout.JAVA_LONG, e + EV_AUX, aux);
        eventsOut.publish();
    }

    /**
     * Checks now whether the peer closed or aborted, and on every 64th call whether it died (its
     * process at most every {@value #LIVENESS_INTERVAL_NANOS} ns), for a caller that waits on the
     * peer's memory rather than on a request; then throws, naming the peer, if the connection or
     * transport has failed.
     */
    void checkHealthy() {
        if (failure == null) {
            try {
                checkPeer();
            } catch (ProtocolViolation | IllegalStateException | IndexOutOfBoundsException e) {
                dropAfter(e);
            }
        }
        checkOpen();
    }

    /** Fails the connection when the peer closed, aborted or died, after taking what it delivered. */
    private void checkPeer() {
        long state = remote.state();
        if (state == ShmLayout.STATE_CLOSED || state == ShmLayout.STATE_ABORTED) {
            progressInbound();
            if (state == ShmLayout.STATE_CLOSED) {
                completeSendsThePeerReceived();
            }
            fail("peer " + peer + " " + (state == ShmLayout.STATE_CLOSED ? "closed its transport" : "aborted"), null);
            return;
        }
        // The clock every 64th pass only: a read costs about as much as a pass that finds nothing.
        if ((++passes & 63) != 0) {
            return;
        }
        if ((long) LONG.getAcquire(outFile, outDropped) != 0) {
            progressInbound();
            fail("peer " + peer + " dropped its connection to rank " + rank + " after a failure on its side"
                    + " (its own error says which)", null);
            return;
        }
        long now = System.nanoTime();
        if (now - nextLivenessCheck >= 0) {
            nextLivenessCheck = now + LIVENESS_INTERVAL_NANOS;
            if (!remote.alive()) {
                progressInbound();
                fail("peer " + peer + " (pid " + remote.info.pid() + ") died", null);
                remote.deleteFiles();
            }
        }
    }

    // ---------------------------------------------------------------- failure

    /**
     * {@link #fail} for a reason of this side's (a protocol violation, a copy that threw, a buffer
     * freed under a pending request), told to the peer, whose requests to this side fail too.
     */
    void drop(String message, Throwable cause) {
        if (failure == null) {
            LONG.setRelease(inFile, inDropped, 1L);
        }
        fail(message, cause);
    }

    /** Fails every pending request to the peer and every later operation on this connection. */
    void fail(String message, Throwable cause) {
        if (failure != null) {
            return;
        }
        failure = message;
        failureCause = cause;
        requests.failPending(peer, new TransportException(peer, message, cause));
        unmatchedSends.clear();
        activeSends.clear();
        oneSided.clear();
        unpublishedCts.clear();
        unclaimedReceives.clear();
        early.clear();
        cts.clear();
        rendezvousSends = 0;
        eagerSends = 0;
    }

    boolean failed() {
        return failure != null;
    }

    /** Eager messages kept for receives not posted yet (for tests). */
    int earlyMessages() {
        return early.size();
    }

    /** What a pending request is waiting for, for timeout messages. */
    String waitingFor(int slot) {
        if (!requests.pending(slot)) {
            return "";
        }
        return switch (requests.kind[slot]) {
            case RequestTable.SEND -> requests.placed[slot]
                    ? " (sent eagerly; no matching irecv posted by peer " + peer + " yet)"
                    : requests.transferred[slot] > 0
                    ? " (" + requests.transferred[slot] + " bytes sent, waiting for peer " + peer + " to drain its bounce buffer)"
                    : unmatchedSends.contains(slot) ? " (no matching irecv posted by peer " + peer + " yet)"
                    : " (matched, waiting for room in peer " + peer + "'s event ring)";
            case RequestTable.RECV -> unpublishedCts.contains(requests.id(slot))
                    ? " (waiting for peer " + peer + " to take earlier clear-to-send entries)"
                    : " (" + requests.transferred[slot] + " bytes received; waiting for peer " + peer + " to send)";
            case RequestTable.WRITE, RequestTable.READ -> requests.placed[slot]
                    ? " (data written, waiting for peer " + peer + " to poll immediates: its ring is full)"
                    : " (queued behind a write waiting for peer " + peer + " to poll immediates)";
            default -> "";
        };
    }

    // ---------------------------------------------------------------- helpers

    private int acquire(int kind, int tag, MemorySegment segment, long offset, long length) {
        return requests.acquire(kind, peer, tag, segment, offset, length);
    }

    private void checkOpen() {
        transport.checkUsable();
        if (failure != null) {
            throw failedError();
        }
    }

    private TransportException failedError() {
        return new TransportException(peer, "shm connection rank " + rank + " -> peer " + peer + " failed: " + failure,
                failureCause);
    }

    /**
     * Leaves no trace of a post that threw after taking request {@code slot}: its caller never got
     * the id that frees the slot, and the CTS of a receive that nobody waits for would still
     * complete the peer's send and hand each later message of its tag to the receive before its
     * own. Where this thread cannot reach the caller's own {@code local} memory (any longer: its
     * arena was closed meanwhile), the copy from or into it is what threw, before the post
     * published anything, and the connection goes on. Anything else (a ring the peer corrupted,
     * an earlier request's copy) leaves state shared with the peer that cannot be trusted: the
     * connection is dropped, as a progress pass drops it.
     *
     * @return what the caller is to throw
     */
    private RuntimeException abandon(int slot, MemorySegment local, RuntimeException e) {
        unpublishedCts.remove(requests.id(slot));
        unclaimedReceives.removeIfPresent(slot);
        oneSided.removeIfPresent(slot);
        requests.release(slot);
        if (!local.scope().isAlive() || !local.isAccessibleBy(Thread.currentThread())) {
            return e;
        }
        dropAfter(e);
        return failedError();
    }

    private static void checkRange(ShmRegistration buffer, long offset, long length, String op) {
        long size = buffer.segment.byteSize();
        if (offset < 0 || length < 0 || offset > size || length > size - offset) {
            throw new IllegalArgumentException(op + " of " + length + " bytes at offset " + offset
                    + " outside a registered buffer of " + size + " bytes");
        }
    }

    /**
     * The peer's mapped slab that holds {@code [target.address() + offset, + length)}, after
     * checking the descriptor against the peer's region table.
     */
    private MemorySegment resolve(RemoteBuffer target, long offset, long length, String op) {
        if (target.owner() != peer) {
            throw new IllegalArgumentException(op + ": remote buffer of rank " + target.owner()
                    + " used on the connection to peer " + peer);
        }
        if (!target.contains(offset, length)) {
            throw new IllegalArgumentException(op + " of " + length + " bytes at offset " + offset
                    + " outside remote buffer " + target);
        }
        long address = target.address() + offset;
        int slab = remote.regions.resolve(target.key(), address, length);
        MemorySegment mapped = peerSlab(slab, address, length);
        if (mapped == null) {
            throw new TransportException(peer, op + ": " + target + " is not a region peer " + peer
                    + (slab == RegionTable.OUT_OF_BOUNDS ? " registered with these bounds" : " has registered (any longer)"));
        }
        if (!target.name().equals(remote.slabName(slab))) {
            throw new IllegalArgumentException(op + ": " + target + " names file '" + target.name()
                    + "' but its region lives in '" + remote.slabName(slab) + "'");
        }
        return mapped;
    }

    /** The mapped slab for a {@link RegionTable#resolve} result, or null if the range is not registered. */
    private MemorySegment peerSlab(int slab, long address, long length) {
        if (slab < 0) {
            return null;
        }
        MemorySegment mapped;
        try {
            mapped = remote.slab(slab);
        } catch (IOException e) {
            throw new TransportException(peer, "shm rank " + rank + ": cannot map slab " + slab + " of peer " + peer + ": " + e, e);
        }
        // the address and length come from the peer (its CTS or region table): a sum of them may overflow
        return address >= 0 && length >= 0 && length <= mapped.byteSize() - address ? mapped : null;
    }

    /** The peer broke the protocol (or its memory was corrupted): the connection is failed. */
    private static final class ProtocolViolation extends RuntimeException {
        ProtocolViolation(String message) {
            super(message, null, false, false);
        }
    }
}
