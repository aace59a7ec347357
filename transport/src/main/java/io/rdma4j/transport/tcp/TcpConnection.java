package io.rdma4j.transport.tcp;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.internal.LongRing;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.util.Arrays;

/**
 * The socket to one peer and the state of both directions of its byte stream. Outgoing frames
 * are queued as small long-encoded entries (below) and encoded into a staging buffer when the
 * socket can take them; small payloads are copied into the staging buffer, large ones are written
 * from the registered memory right after it. Incoming frames are parsed from an
 * input buffer; payloads go straight into their registered target (large ones are read into it
 * from the socket directly). Every method runs under the transport's lock.
 *
 * <p><b>Two-sided</b>: each irecv sends a CTS (its request id, tag and capacity); the sender pairs
 * the k-th CTS of a tag with its k-th send of that tag. A send with its CTS in hand goes as DATA
 * addressed to that receive. A send of at most {@link #EAGER_BYTES} without one does not wait: it
 * goes at once as EAGER (tag, length, payload), so an exchange (both sides irecv and isend, as a
 * collective's step does) costs one crossing of the wire instead of the CTS's plus the data's. The
 * receiver gives it to the oldest posted receive of its tag that no message claimed yet, or keeps
 * it in one of {@link #EAGER_WINDOW} slots until such a receive is posted (the receive's CTS still
 * goes out). The eager send completes once its payload is staged and that CTS arrived, so a send
 * completes only once a receive took it, and one larger than its receive fails on both sides, as
 * on every provider. A send goes eagerly only while no earlier send of its tag waits for a CTS
 * (it must not overtake it) and fewer than {@code EAGER_WINDOW} eager sends wait for theirs (the
 * peer has that many slots); otherwise it waits for its CTS like a large one.
 *
 * <p>Queue entries: {@code CTS id tag capacity}, {@code DATA id}, {@code EAGER id},
 * {@code WRITE id}, {@code READ_REQ id}, {@code SEND_ERR recvId length},
 * {@code READ_RESP readId key offset length}. Entries naming a local request, except a CTS (a
 * receive may take a kept eager message before its CTS went out), are skipped if that request
 * failed meanwhile.
 */
final class TcpConnection implements Connection {
    private static final int STAGING_BYTES = 256 << 10;
    private static final int INPUT_BYTES = 256 << 10;
    /**
     * Payloads up to this size are copied into the staging buffer: one syscall for many small
     * frames. Of a larger payload with frames queued behind it (without: {@link
     * #LAST_PAYLOAD_HEAD_BYTES}) its first this many bytes are, behind its header, and the rest
     * is written from its memory: a header written alone went out as a TCP segment of its own
     * (TCP_NODELAY) and woke the reader for 40 bytes. 2-rank allreduce over TCP on one host, old
     * and new taking turns, 6 pairs (allreduce-perf -t tcp -b 64K -e 4M -f 2): 1 MiB 474-680 us
     * -> 366-525 us, 64 KiB 57-87 -> 45-63 us.
     */
    private static final int COPY_PAYLOAD_MAX = 32 << 10;
    /**
     * The head of a large payload that no other frame waits behind (a collective step's one
     * message, whose reader waits for it): as well against a lone header, and 32 KiB less to copy.
     * Payloads with frames queued behind them (a pipeline's chunks) keep the {@link
     * #COPY_PAYLOAD_MAX} head: with 512 bytes for every payload, 4 ranks on 2 cores took 10-20%
     * longer at 4-8 MiB. {@code allreduce-perf -t tcp -R 3 -p out}, the heads taking turns, three
     * passes on 2 cores: 2 ranks ({@code -b 256K -e 4M -f 2 -n 100 -w 10}) 512 KiB 129-136 us
     * against 139-141 with 32 KiB heads for all; 4 ranks ({@code -b 64K -e 8M -f 4 -n 30 -w 5})
     * 256 KiB 202-205 against 216-224, 1 MiB 719-720 against 736-743, and ({@code -b 2M -e 16M -f 2
     * -n 20 -w 5}, four passes) 8 MiB 7.9-8.4 ms against 7.5-9.2. Re-measure the same way.
     */
    private static final int LAST_PAYLOAD_HEAD_BYTES = 512;
    /**
     * Payloads from this size are large: fills read {@link #SMALL_FILL} at most after one, so that
     * the next large one goes straight from the socket into its target.
     */
    private static final int LARGE_PAYLOAD = 64 << 10;
    /** Payload remainders from this size are read from the socket straight into the target. */
    private static final int DIRECT_READ_MIN = 32 << 10;
    /**
     * What a fill reads at most while large payloads come: the frames between two of them (a CTS,
     * the next one's header) and a little of the next, so that its rest is read straight into its
     * target instead of being copied out of the input buffer.
     */
    private static final int SMALL_FILL = 8 * Frame.HEADER;
    private static final long NONE = -1;
    /**
     * The largest send that goes without waiting for its CTS: 64 KiB + 64 B holds a collective's
     * small-vector message whole over TCP (a 32-byte descriptor and up to 64 KiB of payload,
     * {@code AlgorithmPolicy.TCP_RECURSIVE_DOUBLING_BYTES}), so each of its exchanges crosses the
     * wire once instead of waiting for the peer's CTS first (Open MPI's TCP eager limit is 64 KiB
     * too). Re-measure with {@code allreduce-perf --ranks 2 -t tcp -b 4K -e 128K -f 2 -n 200 -w 20
     * -p out}, builds with the old and the new bound taking turns.
     */
    static final int EAGER_BYTES = 64 * 1024 + 64;
    /** Eager sends that may wait for their CTS at once: the slots the peer keeps unclaimed messages in. */
    static final int EAGER_WINDOW = 16;
    /** Payload kinds being read that are not frame types: an eager message kept in a slot, or refused. */
    private static final int KEPT = -1;
    private static final int DISCARDED = -2;
    private static final int SLOT_FREE = 0;
    private static final int SLOT_ARRIVING = 1;
    private static final int SLOT_READY = 2;

    private final TcpTransport transport;
    private final RequestTable requests;
    final int peer;
    final String peerAddress;
    private final SocketChannel channel;
    SelectionKey selectionKey;
    TransportException failure;

    // Outgoing.
    private final LongRing out = new LongRing(64);
    private final ByteBuffer staging = ByteBuffer.allocateDirect(STAGING_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    private final MemorySegment stagingSegment = MemorySegment.ofBuffer(staging);
    private int stageFill;
    private int stageFlushed;
    private TcpBuffer writeBuffer;
    private long writeOffset;
    private long writeRemaining;
    private long writeCompletes = NONE;

    // Incoming.
    private final ByteBuffer input = ByteBuffer.allocateDirect(INPUT_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    private final MemorySegment inputSegment = MemorySegment.ofBuffer(input);
    private int inPos;
    private int inLimit;
    private TcpBuffer readBuffer;
    private long readOffset;
    private long readRemaining;
    private int readType;
    private long readId;
    private long readLength;
    private long readImmediate;
    /**
     * Whether the last payload was large ({@link #LARGE_PAYLOAD}): large frames come in runs, so
     * fills read {@link #SMALL_FILL} at most until a small payload comes (a full-size fill would
     * copy almost all of the next large payload). Frames without a payload (CTS) leave it as it is:
     * they come between the large ones.
     */
    private boolean largePayloads;
    /**
     * Whether this pass's last read returned less than it had room for: the socket held no more,
     * so reading again in the same pass would only cost a system call that returns nothing (the
     * selector reports what arrives later).
     */
    private boolean drained;

    // Two-sided matching: sends waiting for a CTS, receives no message claimed yet, and CTSs
    // that arrived before their send, all in arrival order.
    private final SlotFifo pendingSends;
    private final SlotFifo postedReceives;
    /** Eager sends whose CTS has not arrived. */
    private int eagerWaiting;
    /**
     * Eager messages that arrived before their receive, one slot of EAGER_BYTES each, and one
     * more slot that a refused message's payload is read into and dropped. A slot's memory is
     * made when a message first needs it ({@link #keptSlot}): collectives post their receives
     * before their peers' messages arrive, so most connections keep none, and the full window
     * (about 1 MiB) is paid only by a peer that sends that far ahead.
     */
    private final TcpBuffer[] kept = new TcpBuffer[EAGER_WINDOW + 1];
    private final int[] keptTag = new int[EAGER_WINDOW];
    private final long[] keptLength = new long[EAGER_WINDOW];
    private final int[] keptState = new int[EAGER_WINDOW];
    private final long[] keptOrder = new long[EAGER_WINDOW];
    /** The receive that claimed a kept message still arriving, or NONE. */
    private final long[] keptClaim = new long[EAGER_WINDOW];
    private long keptCount;
    /**
     * Clear-to-sends that may wait for their sends at once: a peer sends one per receive it has
     * posted, and no rank's request table holds more than this; more is a peer posting without end.
     */
    static final int MAX_UNMATCHED_CTS = TransportConfig.MAX_OUTSTANDING_REQUESTS;
    /**
     * Read responses queued and not yet written: a peer asks for one per read it has posted, and
     * no rank's request table holds more than this; more is a peer asking without reading.
     */
    static final int MAX_QUEUED_READ_RESPONSES = TransportConfig.MAX_OUTSTANDING_REQUESTS;
    /**
     * Immediates of the peer's writes that this side holds for {@link #pollImmediate} at most (as
     * the shared-memory provider's ring): beyond them this side stops reading the stream until the
     * application polls, and TCP's window holds the peer's writes back.
     */
    static final int MAX_UNPOLLED_IMMEDIATES = 1024;
    private int[] ctsTag = new int[16];
    private long[] ctsRecvId = new long[16];
    private long[] ctsCapacity = new long[16];
    private int ctsCount;

    private final LongRing immediates = new LongRing(16);
    /** Whether the stream's parsing stopped at {@link #MAX_UNPOLLED_IMMEDIATES}, frames possibly left in the input. */
    private boolean heldForImmediates;
    private int queuedReadResponses;
    /**
     * Reads failed locally whose response may still come ({@link #abandonRead}), with their
     * lengths; rare, so searched linearly.
     */
    private long[] abandonedReads = new long[4];
    private long[] abandonedLengths = new long[4];
    private int abandonedCount;
    /** The rank whose loss the peer reported in its last frame before it closed (FAULT), or -1. */
    int peerLost = -1;
    /** Whether the FAULT frame of {@link #faultWritten} is staged. */
    private boolean faultStaged;

    TcpConnection(TcpTransport transport, int peer, SocketChannel channel, String peerAddress) {
        this.transport = transport;
        this.requests = transport.requests;
        this.peer = peer;
        this.channel = channel;
        this.peerAddress = peerAddress;
        this.pendingSends = new SlotFifo(requests);
        this.postedReceives = new SlotFifo(requests);
    }

    /** The connection's socket, for the options set and read beside NIO ({@link CongestionControl}). */
    SocketChannel channel() {
        return channel;
    }

    // ---- Connection API: delegated to the transport, which owns the lock and the request table.

    @Override
    public int peer() {
        return peer;
    }

    @Override
    public long isend(RegisteredBuffer source, long offset, long length, int tag) {
        return transport.isend(this, source, offset, length, tag);
    }

    @Override
    public long irecv(RegisteredBuffer target, long offset, long capacity, int tag) {
        return transport.irecv(this, target, offset, capacity, tag);
    }

    @Override
    public long write(RegisteredBuffer source, long sourceOffset, RemoteBuffer target, long targetOffset, long length, long immediate) {
        return transport.write(this, source, sourceOffset, target, targetOffset, length, immediate);
    }

    @Override
    public long read(RegisteredBuffer target, long targetOffset, RemoteBuffer source, long sourceOffset, long length) {
        return transport.read(this, target, targetOffset, source, sourceOffset, length);
    }

    @Override
    public long pollImmediate() {
        return transport.pollImmediate(this);
    }

    @Override
    public void flush() {
        transport.flush(this);
    }

    // ---- Queueing (transport side).

    void enqueue(int type, long id) {
        out.add(type);
        out.add(id);
    }

    void enqueueCts(long recvId, int tag, long capacity) {
        out.add(Frame.CTS);
        out.add(recvId);
        out.add(tag);
        out.add(capacity);
    }

    void enqueueSendError(long recvId, long length) {
        out.add(Frame.SEND_ERR);
        out.add(recvId);
        out.add(length);
    }

    /** Send {@code slot} (no CTS in hand) waits for its CTS, going eagerly if it may (see the class comment). */
    void sendWithoutCts(int slot) {
        if (requests.length[slot] <= EAGER_BYTES && eagerWaiting < EAGER_WINDOW
                && !pendingSends.holdsRendezvous(requests.tag[slot])) {
            requests.eager[slot] = RequestTable.EAGER;
            eagerWaiting++;
            enqueue(Frame.EAGER, requests.id(slot));
        }
        pendingSends.append(slot);
    }

    /**
     * Receive {@code slot} was posted: it takes the oldest kept eager message of its tag, else
     * waits for a message. Its CTS goes out either way.
     */
    void post(int slot) {
        int u = oldestUnclaimedKept(requests.tag[slot]);
        if (u < 0) {
            postedReceives.append(slot);
        } else if (keptState[u] == SLOT_READY) {
            deliverKept(slot, u);
        } else {
            keptClaim[u] = requests.id(slot);
        }
        enqueueCts(requests.id(slot), requests.tag[slot], requests.length[slot]);
    }

    private int oldestUnclaimedKept(int tag) {
        int found = -1;
        for (int u = 0; u < EAGER_WINDOW; u++) {
            if (keptState[u] != SLOT_FREE && keptTag[u] == tag && keptClaim[u] == NONE
                    && (found < 0 || keptOrder[u] < keptOrder[found])) {
                found = u;
            }
        }
        return found;
    }

    /** Hands kept message {@code u} (arrived whole) to receive {@code slot} and frees its slot. */
    private void deliverKept(int slot, int u) {
        long length = keptLength[u];
        if (length > requests.length[slot]) {
            requests.fail(slot, refused(slot, length));
        } else {
            MemorySegment.copy(kept[u].segment(), 0, requests.buffer[slot].segment(), requests.offset[slot], length);
            requests.complete(slot, length);
        }
        keptState[u] = SLOT_FREE;
    }

    /** The receiver's side of a send larger than the receive its tag paired it with. */
    private TransportException refused(int recvSlot, long sent) {
        return new TransportException(peer, "peer " + peer + " sent " + sent + " bytes under tag "
                + requests.tag[recvSlot] + " but the matching irecv offered only " + requests.length[recvSlot]);
    }

    /** An eager send completes (or fails, its receive being too small) once staged and met by its CTS. */
    private void settleEager(int slot) {
        if (requests.eager[slot] != (RequestTable.EAGER | RequestTable.STAGED | RequestTable.CTS_SEEN)) {
            return;
        }
        if (requests.length[slot] > requests.offered[slot]) {
            requests.fail(slot, transport.tooSmall(this, slot, requests.offered[slot]));
        } else {
            requests.complete(slot, requests.length[slot]);
        }
    }

    /** Index of the oldest unmatched CTS for {@code tag}, or -1. */
    int findCts(int tag) {
        for (int i = 0; i < ctsCount; i++) {
            if (ctsTag[i] == tag) {
                return i;
            }
        }
        return -1;
    }

    long ctsRecvId(int i) {
        return ctsRecvId[i];
    }

    long ctsCapacity(int i) {
        return ctsCapacity[i];
    }

    void removeCts(int i) {
        int tail = ctsCount - i - 1;
        System.arraycopy(ctsTag, i + 1, ctsTag, i, tail);
        System.arraycopy(ctsRecvId, i + 1, ctsRecvId, i, tail);
        System.arraycopy(ctsCapacity, i + 1, ctsCapacity, i, tail);
        ctsCount--;
    }

    private void addCts(int tag, long recvId, long capacity) {
        if (ctsCount == ctsTag.length) {
            ctsTag = Arrays.copyOf(ctsTag, ctsCount * 2);
            ctsRecvId = Arrays.copyOf(ctsRecvId, ctsCount * 2);
            ctsCapacity = Arrays.copyOf(ctsCapacity, ctsCount * 2);
        }
        ctsTag[ctsCount] = tag;
        ctsRecvId[ctsCount] = recvId;
        ctsCapacity[ctsCount] = capacity;
        ctsCount++;
    }

    long pollImmediateValue() {
        return immediates.isEmpty() ? NO_IMMEDIATE : immediates.poll();
    }

    /**
     * After a poll: when parsing stopped at the cap of unpolled immediates and there is room now,
     * parses on (frames may wait in the input buffer, and the selector reports only new bytes).
     */
    int resumeAfterPoll() throws IOException {
        if (!heldForImmediates || immediates.size() >= MAX_UNPOLLED_IMMEDIATES) {
            return 0;
        }
        heldForImmediates = false; // set again if the cap is met again
        return onReadable();
    }

    int unpolledImmediates() {
        return immediates.size();
    }

    /** Whether a payload of {@code b}'s memory is half-way through this connection's stream. */
    boolean uses(TcpBuffer b) {
        return (writeRemaining > 0 && writeBuffer.overlaps(b)) || (readRemaining > 0 && readBuffer.overlaps(b));
    }

    /**
     * {@code b} is being freed: a read's response half-way into its memory goes on into the sink
     * instead (the read has failed), so the stream can continue.
     */
    void divertReadFrom(TcpBuffer b) {
        if (readRemaining > 0 && readType == Frame.READ_RESP && readBuffer.overlaps(b)) {
            readType = DISCARDED;
            readBuffer = keptSlot(EAGER_WINDOW);
            readOffset = 0;
        }
    }

    /**
     * The read {@code id} failed locally (its target was freed) after its request may have
     * gone out: its response, when it comes, is read into the sink and dropped.
     */
    void abandonRead(long id, long length) {
        if (abandonedCount == abandonedReads.length) {
            abandonedReads = Arrays.copyOf(abandonedReads, abandonedCount * 2);
            abandonedLengths = Arrays.copyOf(abandonedLengths, abandonedCount * 2);
        }
        abandonedReads[abandonedCount] = id;
        abandonedLengths[abandonedCount++] = length;
    }

    /**
     * Whether {@code id} was an abandoned read (and is no longer, from here on) whose response
     * may carry {@code length} bytes: any length for a read error ({@code length < 0}), else the
     * read's own.
     */
    private boolean forgetAbandoned(long id, long length) {
        for (int i = 0; i < abandonedCount; i++) {
            if (abandonedReads[i] == id && (length < 0 || abandonedLengths[i] == length)) {
                abandonedCount--;
                abandonedReads[i] = abandonedReads[abandonedCount];
                abandonedLengths[i] = abandonedLengths[abandonedCount];
                return true;
            }
        }
        return false;
    }

    boolean hasOutput() {
        return !out.isEmpty() || stageFlushed < stageFill || writeRemaining > 0;
    }

    // ---- Writing.

    /** Writes as much queued output as the socket takes; returns how many writes moved bytes. */
    int flushOutput() throws IOException {
        int work = 0;
        while (true) {
            if (stageFlushed < stageFill || writeRemaining > 0) {
                if (writeSome() > 0) {
                    work++;
                }
                if (writeRemaining == 0 && writeCompletes != NONE) {
                    int s = requests.slot(writeCompletes);
                    if (s >= 0) {
                        requests.complete(s, requests.length[s]);
                    }
                    writeCompletes = NONE;
                    writeBuffer = null;
                }
                if (stageFlushed < stageFill || writeRemaining > 0) {
                    return work; // the socket is full
                }
            }
            if (out.isEmpty()) {
                return work;
            }
            while (!out.isEmpty() && writeRemaining == 0 && stageFill + Frame.HEADER + stagedPayloadOfNext() <= STAGING_BYTES) {
                encodeNext();
            }
        }
    }

    /**
     * One write: the staging buffer first, then the pending payload. Not a gathering write: for
     * buffers backed by a memory segment the JDK allocates a releaser per buffer per gathering
     * write, and the extra syscall only ever happens for payloads above COPY_PAYLOAD_MAX.
     */
    private long writeSome() throws IOException {
        long n;
        if (stageFlushed < stageFill) {
            staging.limit(stageFill).position(stageFlushed);
            n = channel.write(staging);
            stageFlushed = staging.position();
            staging.limit(STAGING_BYTES); // absolute puts of the next headers are checked against the limit
            if (stageFlushed == stageFill) {
                stageFlushed = 0;
                stageFill = 0;
            } else {
                return n;
            }
        } else {
            n = 0;
        }
        if (writeRemaining > 0) {
            ByteBuffer payload = writeBuffer.view(writeOffset, writeRemaining);
            int start = payload.position();
            n += channel.write(payload);
            int moved = payload.position() - start;
            writeOffset += moved;
            writeRemaining -= moved;
        }
        return n;
    }

    private void header(int type, int tag, long a, long b, long c, long d) {
        int p = stageFill;
        staging.putInt(p + Frame.OFF_TYPE, type);
        staging.putInt(p + Frame.OFF_TAG, tag);
        staging.putLong(p + Frame.OFF_A, a);
        staging.putLong(p + Frame.OFF_B, b);
        staging.putLong(p + Frame.OFF_C, c);
        staging.putLong(p + Frame.OFF_D, d);
        stageFill = p + Frame.HEADER;
    }

    /** Puts the payload after the header just encoded: copied if small, else its head copied and the rest written from memory. */
    private void payload(TcpBuffer source, long offset, long length, long completes) {
        if (length <= COPY_PAYLOAD_MAX && stageFill + length <= STAGING_BYTES) {
            MemorySegment.copy(source.segment(), offset, stagingSegment, stageFill, length);
            stageFill += (int) length;
            int s = completes == NONE ? -1 : requests.slot(completes);
            if (s >= 0) {
                requests.complete(s, length);
            }
        } else {
            long head = Math.min(out.isEmpty() ? LAST_PAYLOAD_HEAD_BYTES : COPY_PAYLOAD_MAX, STAGING_BYTES - stageFill);
            MemorySegment.copy(source.segment(), offset, stagingSegment, stageFill, head);
            stageFill += (int) head;
            writeBuffer = source;
            writeOffset = offset + head;
            writeRemaining = length - head;
            writeCompletes = completes;
        }
    }

    /** The bytes the next queue entry must copy into the staging buffer with its header (an eager payload). */
    private long stagedPayloadOfNext() {
        if (out.peek(0) != Frame.EAGER) {
            return 0;
        }
        int s = requests.slot(out.peek(1));
        return s < 0 ? 0 : requests.length[s];
    }

    private void encodeNext() {
        int type = (int) out.peek(0);
        switch (type) {
            case Frame.CTS -> {
                header(Frame.CTS, (int) out.peek(2), out.peek(1), out.peek(3), 0, 0);
                out.skip(4);
            }
            case Frame.EAGER -> {
                long id = out.peek(1);
                out.skip(2);
                int s = requests.slot(id, RequestTable.SEND, peer, RequestTable.ACTIVE);
                if (s >= 0) {
                    long length = requests.length[s];
                    header(Frame.EAGER, requests.tag[s], 0, length, 0, 0);
                    MemorySegment.copy(requests.buffer[s].segment(), requests.offset[s], stagingSegment, stageFill, length);
                    stageFill += (int) length;
                    requests.eager[s] |= RequestTable.STAGED;
                    settleEager(s);
                }
            }
            case Frame.DATA -> {
                long id = out.peek(1);
                out.skip(2);
                int s = requests.slot(id, RequestTable.SEND, peer, RequestTable.ACTIVE);
                if (s >= 0) {
                    header(Frame.DATA, requests.tag[s], requests.remoteId[s], requests.length[s], 0, 0);
                    payload(requests.buffer[s], requests.offset[s], requests.length[s], id);
                }
            }
            case Frame.SEND_ERR -> {
                header(Frame.SEND_ERR, 0, out.peek(1), out.peek(2), 0, 0);
                out.skip(3);
            }
            case Frame.WRITE -> {
                long id = out.peek(1);
                out.skip(2);
                int s = requests.slot(id, RequestTable.WRITE, peer, RequestTable.ACTIVE);
                if (s >= 0) {
                    header(Frame.WRITE, 0, requests.remoteId[s], requests.remoteOffset[s], requests.length[s], requests.immediate[s]);
                    payload(requests.buffer[s], requests.offset[s], requests.length[s], id);
                }
            }
            case Frame.READ_REQ -> {
                long id = out.peek(1);
                out.skip(2);
                int s = requests.slot(id, RequestTable.READ, peer, RequestTable.ACTIVE);
                if (s >= 0) {
                    header(Frame.READ_REQ, 0, requests.remoteId[s], requests.remoteOffset[s], requests.length[s], id);
                } else {
                    forgetAbandoned(id, -1); // failed before its request went out: no response will come
                }
            }
            case Frame.READ_RESP -> {
                long readerId = out.peek(1);
                long key = out.peek(2);
                long offset = out.peek(3);
                long length = out.peek(4);
                out.skip(5);
                queuedReadResponses--;
                TcpBuffer region = transport.regions.resolve(key, offset, length);
                if (region == null) {
                    header(Frame.READ_ERR, 0, readerId, 0, 0, 0);
                } else {
                    header(Frame.READ_RESP, 0, readerId, length, 0, 0);
                    payload(region, offset, length, NONE);
                }
            }
            default -> throw new IllegalStateException("corrupt output queue entry " + type);
        }
    }

    // ---- Reading.

    /** Reads and handles every complete frame the socket has; returns how many reads moved bytes. */
    int onReadable() throws IOException {
        int work = 0;
        drained = false;
        while (true) {
            if (readRemaining > 0) {
                int available = inLimit - inPos;
                long moved;
                // as much as the target holds from readOffset: all of it, but for a discarded
                // payload larger than the sink, which wraps around
                long room = Math.min(readRemaining, readBuffer.segment().byteSize() - readOffset);
                if (available > 0) {
                    moved = Math.min(available, room);
                    MemorySegment.copy(inputSegment, inPos, readBuffer.segment(), readOffset, moved);
                    inPos += (int) moved;
                } else if (readRemaining >= DIRECT_READ_MIN) {
                    ByteBuffer target = readBuffer.view(readOffset, room);
                    int start = target.position();
                    if (channel.read(target) < 0) {
                        throw new EOFException("connection closed by peer");
                    }
                    moved = target.position() - start;
                    if (moved == 0) {
                        return work;
                    }
                } else {
                    if (drained || fill(INPUT_BYTES) == 0) {
                        return work;
                    }
                    continue;
                }
                work++;
                readOffset += moved;
                readRemaining -= moved;
                if (readRemaining == 0) {
                    payloadDone();
                } else if (readOffset == readBuffer.segment().byteSize()) {
                    readOffset = 0; // the sink, full: a target proper never ends before its payload
                }
            } else if (immediates.size() >= MAX_UNPOLLED_IMMEDIATES) {
                heldForImmediates = true; // the peer's stream waits for the application's polls
                return work;
            } else if (inLimit - inPos >= Frame.HEADER) {
                int p = inPos;
                inPos += Frame.HEADER;
                onHeader(input.getInt(p + Frame.OFF_TYPE), input.getInt(p + Frame.OFF_TAG), input.getLong(p + Frame.OFF_A),
                        input.getLong(p + Frame.OFF_B), input.getLong(p + Frame.OFF_C), input.getLong(p + Frame.OFF_D));
                work++;
            } else if (drained || fill(largePayloads ? SMALL_FILL : INPUT_BYTES) == 0) {
                return work;
            }
        }
    }

    /** Reads up to {@code most} bytes (as the input buffer has room) after the unparsed input. */
    private int fill(int most) throws IOException {
        if (inPos == inLimit) {
            inPos = 0;
            inLimit = 0;
        } else if (INPUT_BYTES - inLimit < Frame.HEADER) {
            MemorySegment.copy(inputSegment, inPos, inputSegment, 0, inLimit - inPos);
            inLimit -= inPos;
            inPos = 0;
        }
        input.limit((int) Math.min(INPUT_BYTES, (long) inLimit + most)).position(inLimit);
        int n = channel.read(input);
        if (n < 0) {
            throw new EOFException("connection closed by peer");
        }
        drained = input.hasRemaining();
        inLimit += n;
        return n;
    }

    private void onHeader(int type, int tag, long a, long b, long c, long d) {
        if (peerLost >= 0) {
            throw violation("a frame after its fault frame, its last");
        }
        switch (type) {
            case Frame.CTS -> {
                if (b < 0) {
                    throw violation("a clear-to-send with negative capacity " + b);
                }
                int s = pendingSends.takeOldest(tag);
                if (s >= 0 && requests.eager[s] != 0) {
                    eagerWaiting--;
                    requests.offered[s] = b;
                    requests.eager[s] |= RequestTable.CTS_SEEN;
                    settleEager(s);
                } else if (s >= 0) {
                    transport.matched(this, s, a, b);
                } else if (ctsCount == MAX_UNMATCHED_CTS) {
                    throw violation("more than " + MAX_UNMATCHED_CTS + " clear-to-sends that no send has used");
                } else {
                    addCts(tag, a, b);
                }
            }
            case Frame.DATA -> {
                int s = requests.slot(a, RequestTable.RECV, peer, RequestTable.ACTIVE);
                if (s < 0) {
                    throw violation("data for no receive posted to it (request id 0x" + Long.toHexString(a) + ")");
                }
                if (b < 0 || b > requests.length[s]) {
                    throw violation(b + " bytes of data for a receive of capacity " + requests.length[s]);
                }
                if (!postedReceives.remove(s)) {
                    throw violation("data for a receive that an eager message already took");
                }
                requests.state[s] = RequestTable.RECEIVING;
                startPayload(Frame.DATA, a, requests.buffer[s], requests.offset[s], b, 0);
            }
            case Frame.EAGER -> {
                if (b < 0 || b > EAGER_BYTES) {
                    throw violation("an eager message of " + b + " bytes (at most " + EAGER_BYTES + " go eagerly)");
                }
                int s = postedReceives.takeOldest(tag);
                if (s >= 0 && b > requests.length[s]) {
                    requests.fail(s, refused(s, b));
                    startPayload(DISCARDED, NONE, keptSlot(EAGER_WINDOW), 0, b, 0);
                } else if (s >= 0) {
                    requests.state[s] = RequestTable.RECEIVING;
                    startPayload(Frame.DATA, requests.id(s), requests.buffer[s], requests.offset[s], b, 0);
                } else {
                    int free = freeKeptSlot();
                    if (free < 0) {
                        throw violation("more than " + EAGER_WINDOW + " eager messages that no receive took");
                    }
                    keptTag[free] = tag;
                    keptLength[free] = b;
                    keptState[free] = SLOT_ARRIVING;
                    keptOrder[free] = keptCount++;
                    keptClaim[free] = NONE;
                    startPayload(KEPT, free, keptSlot(free), 0, b, 0);
                }
            }
            case Frame.SEND_ERR -> {
                int s = requests.slot(a, RequestTable.RECV, peer, RequestTable.ACTIVE);
                if (s < 0 || !postedReceives.remove(s)) {
                    throw violation("a send error for no receive waiting for it");
                }
                requests.fail(s, refused(s, b));
            }
            case Frame.WRITE -> {
                TcpBuffer region = transport.regions.resolve(a, b, c);
                if (region == null) {
                    throw violation("a one-sided write outside every region registered for remote access (key 0x"
                            + Long.toHexString(a) + ", offset " + b + ", length " + c + ")");
                }
                if (d != NO_IMMEDIATE && (d < 0 || d > 0xFFFF_FFFFL)) {
                    throw violation("an immediate value " + d + " that is not an unsigned 32-bit value");
                }
                startPayload(Frame.WRITE, d, region, b, c, d);
            }
            case Frame.READ_REQ -> {
                if (transport.regions.resolve(a, b, c) == null) {
                    throw violation("a one-sided read outside every region registered for remote access (key 0x"
                            + Long.toHexString(a) + ", offset " + b + ", length " + c + ")");
                }
                if (queuedReadResponses == MAX_QUEUED_READ_RESPONSES) {
                    throw violation("more than " + MAX_QUEUED_READ_RESPONSES + " read requests without reading the responses");
                }
                queuedReadResponses++;
                out.add(Frame.READ_RESP);
                out.add(d);
                out.add(a);
                out.add(b);
                out.add(c);
            }
            case Frame.READ_RESP -> {
                int s = requests.slot(a, RequestTable.READ, peer, RequestTable.ACTIVE);
                if (s < 0 && b >= 0 && forgetAbandoned(a, b)) {
                    startPayload(DISCARDED, NONE, keptSlot(EAGER_WINDOW), 0, b, 0);
                    return;
                }
                if (s < 0) {
                    throw violation("a read response of " + b + " bytes for no read posted to it of that length");
                }
                if (b != requests.length[s]) {
                    throw violation("a read response of " + b + " bytes for a read of " + requests.length[s]);
                }
                requests.state[s] = RequestTable.RECEIVING;
                startPayload(Frame.READ_RESP, a, requests.buffer[s], requests.offset[s], b, 0);
            }
            case Frame.FAULT -> {
                if (a < 0 || a >= transport.size()) {
                    throw violation("a fault naming rank " + a);
                }
                peerLost = (int) a;
            }
            case Frame.READ_ERR -> {
                int s = requests.slot(a, RequestTable.READ, peer, RequestTable.ACTIVE);
                if (s < 0 && forgetAbandoned(a, -1)) {
                    return;
                }
                if (s < 0) {
                    throw violation("a read error for no read posted to it");
                }
                requests.fail(s, new TransportException(peer, "peer " + peer + " deregistered the region of a pending read"));
            }
            default -> throw violation("an unknown frame type " + type);
        }
    }

    /** Kept slot {@code u}'s memory, made on its first use and reused from then on. */
    private TcpBuffer keptSlot(int u) {
        TcpBuffer slot = kept[u];
        if (slot == null) {
            slot = new TcpBuffer(transport, MemorySegment.ofBuffer(ByteBuffer.allocateDirect(EAGER_BYTES)), null, false, true);
            kept[u] = slot;
        }
        return slot;
    }

    private int freeKeptSlot() {
        for (int u = 0; u < EAGER_WINDOW; u++) {
            if (keptState[u] == SLOT_FREE) {
                return u;
            }
        }
        return -1;
    }

    private void startPayload(int type, long id, TcpBuffer target, long offset, long length, long immediate) {
        readType = type;
        readId = id;
        readBuffer = target;
        readOffset = offset;
        readRemaining = length;
        readLength = length;
        readImmediate = immediate;
        if (length > 0) {
            largePayloads = length >= LARGE_PAYLOAD;
        }
        if (length == 0) {
            payloadDone();
        }
    }

    private void payloadDone() {
        switch (readType) {
            case Frame.DATA, Frame.READ_RESP -> {
                int s = requests.slot(readId);
                if (s >= 0) {
                    requests.complete(s, readLength);
                }
            }
            case Frame.WRITE -> {
                if (readImmediate != NO_IMMEDIATE) {
                    immediates.add(readImmediate);
                }
            }
            case KEPT -> {
                int u = (int) readId;
                keptState[u] = SLOT_READY;
                if (keptClaim[u] != NONE) {
                    int s = requests.slot(keptClaim[u], RequestTable.RECV, peer, RequestTable.ACTIVE);
                    if (s >= 0) {
                        deliverKept(s, u);
                    } else {
                        keptState[u] = SLOT_FREE;
                    }
                }
            }
            case DISCARDED -> {
                // the receive it was for failed already
            }
            default -> throw new IllegalStateException("payload of frame type " + readType);
        }
        readBuffer = null;
    }

    /**
     * One step of writing the last frame before this side closes: FAULT, telling the peer that
     * {@code lostRank}'s loss ended this transport, so that a rank waiting on this one blames the
     * first rank lost, not this one (after the rank that hosts the store died, no fault board
     * carries that). What is being written is finished first, since a frame cut in half reads as
     * a protocol violation; frames not yet encoded are dropped. Writes what the socket takes
     * without waiting, until {@code deadline}, so that the transport can take turns among its peers
     * under one deadline ({@link TcpTransport}'s {@code tellWhoWasLost}): whether the frame is out,
     * or cannot be (the connection failed, the peer is gone, the payload in progress is freed memory).
     */
    boolean faultWritten(int lostRank, long deadline) {
        if (failure != null) {
            return true;
        }
        try {
            while (true) {
                while (stageFlushed < stageFill || writeRemaining > 0) {
                    if (writeSome() == 0 || System.nanoTime() - deadline >= 0) {
                        return false; // the socket is full, or a large payload in progress took the time
                    }
                }
                if (faultStaged) {
                    return true;
                }
                header(Frame.FAULT, 0, lostRank, 0, 0, 0);
                faultStaged = true;
            }
        } catch (IOException gone) {
            return true; // the peer is gone too: it needs no explanation
        } catch (RuntimeException unwritable) {
            // the payload in progress comes from memory freed under it: the frame cannot follow
            // it, and the caller fails this connection next
            return true;
        }
    }

    private TransportException violation(String what) {
        return new ProtocolViolation(peer, "peer " + peer + " (" + peerAddress + ") sent " + what
                + "; frame rejected and connection failed");
    }

    /** A frame that breaks the protocol; nothing of it was applied. */
    static final class ProtocolViolation extends TransportException {
        ProtocolViolation(int peer, String message) {
            super(peer, message);
        }
    }

    // ---- Failure.

    /** Closes the socket and forgets all stream state; the transport fails the requests. */
    void shutdown(TransportException cause) {
        if (failure == null) {
            failure = cause;
        }
        if (selectionKey != null) {
            selectionKey.cancel();
        }
        try {
            channel.close();
        } catch (IOException ignored) {
            // failing anyway
        }
        out.clear();
        queuedReadResponses = 0;
        heldForImmediates = false;
        ctsCount = 0;
        pendingSends.clear();
        postedReceives.clear();
        eagerWaiting = 0;
        Arrays.fill(keptState, SLOT_FREE);
        writeBuffer = null;
        writeRemaining = 0;
        writeCompletes = NONE;
        readBuffer = null;
        readRemaining = 0;
        stageFill = 0;
        stageFlushed = 0;
    }

    @Override
    public String toString() {
        return "TcpConnection[peer " + peer + " at " + peerAddress + (failure != null ? ", failed" : "") + "]";
    }
}
