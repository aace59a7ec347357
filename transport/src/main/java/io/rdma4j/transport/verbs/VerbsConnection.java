package io.rdma4j.transport.verbs;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.internal.LongRing;
import io.rdma4j.verbs.CompletionQueue;
import io.rdma4j.verbs.Gid;
import io.rdma4j.verbs.MemoryRegion;
import io.rdma4j.verbs.QpCapabilities;
import io.rdma4j.verbs.QpEndpoint;
import io.rdma4j.verbs.QpType;
import io.rdma4j.verbs.QueuePair;
import io.rdma4j.verbs.RcParams;
import io.rdma4j.verbs.RecvWorkRequests;
import io.rdma4j.verbs.SendOpcode;
import io.rdma4j.verbs.WorkCompletions;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.security.SecureRandom;
import java.util.Arrays;

/**
 * The RC queue pairs to one peer and the protocol over them. Every method runs under the
 * transport's lock.
 *
 * <p><b>Two-sided</b> (receiver-driven, as NCCL's net_ib): {@code irecv} RDMA-writes a
 * {@link CtsEntry} (address, capacity, rkey, tag, receive slot) into the peer's CTS fifo; the
 * sender consumes its fifo in order, matches the k-th CTS of a tag with its k-th send of that tag,
 * and RDMA-writes the data straight into the receive buffer, striped over the QPs
 * ({@link Striping}). Each QP's part ends with a write-with-immediate naming the receive slot. A
 * send that fills its receive makes its last data write that write (the receiver preset its
 * mailbox word to the capacity); a shorter one follows its data with one, which on QP 0 carries
 * the size into that mailbox word. The receive completes when all QPs' immediates arrived, i.e.
 * when all data is visible.
 *
 * <p><b>Eager</b> (isends of at most {@link #EAGER_BYTES}, as UCX's eager protocol): when no CTS
 * for the send is in hand, the sender does not wait for one. It copies the message behind a
 * header (tag, length) into a staging slot and writes both into the next slot of the peer's eager
 * ring with one write-with-immediate on QP 0: one packet instead of the CTS round trip plus data
 * plus size. The receiver gives it to the oldest receive of that tag no message has claimed yet
 * (a rendezvous message claims its receive with its first immediate, which on QP 0 precedes any
 * later eager message), or keeps it until such a receive is posted; either way it copies the
 * payload out and frees the slot. Every receive still writes its CTS, and the eager isend
 * completes when that CTS arrived (k-th CTS of a tag, k-th send of it, as for rendezvous) and its
 * write completed: so a send completes only once a receive took it and it is in the peer's
 * memory, and one larger than that receive fails on both sides, as on every provider. A send
 * goes eagerly only while no earlier send of its tag waits for a CTS and nothing waits in the
 * backlog (it must not overtake them); with no free ring slot it simply takes the rendezvous
 * path, so messages no receive matches yet never block a send. With a CTS in hand, a small send
 * also goes into the ring (one write instead of two).
 *
 * <p><b>A CTS rides in an eager message</b> that waits in QP 0's batch with it: the CTS goes into
 * the eager header ({@link EagerHeader}) instead of a write of its own, and its receiver copies
 * it into its fifo. So a ping-pong or a collective's exchange (an irecv and an isend to the same
 * peer, then a flush, in either order) posts one work request per side instead of two, one packet
 * where perftest's exchange sends one too. That is why {@code irecv} only queues its CTS: it is
 * written at the next flush or progress pass, or carried by an eager isend before that. An eager
 * message whose CTS is queued before it is posted is complete at once and goes inline when it fits
 * ({@link #INLINE_CHOICES}); one without stays open (not inline) until the doorbell, for a CTS
 * queued later.
 *
 * <p><b>One-sided</b>: writes and reads go straight to the peer's registered memory. A write with
 * an immediate also ends with a write-with-immediate on every QP, the one on QP 0 putting the
 * 32-bit value into the peer's immediate ring, where it stays until the peer's application polls
 * it ({@link #USER_RING} slots); the peer delivers values in ring order once every QP's part
 * arrived. So an immediate implies that everything this side wrote to that peer
 * earlier is visible too, whatever QP it went over; so does a completed receive of a rendezvous
 * send, which ends with a write with immediate on every QP. An eager send travels on QP 0 alone:
 * with several QPs per connection, its receive may complete before an earlier write's part on
 * another QP landed (the {@link io.rdma4j.transport.Connection} contract promises no such order;
 * a write with an immediate is the signal that does).
 *
 * <p><b>Flow control</b> ({@link Credits}): CTS entries only into free fifo slots,
 * write-with-immediates only against receive work requests the peer posted, and a write's
 * immediate value only into a ring slot the peer's application polled, so the peer is never
 * overrun and RNR never happens; both sides report consumption by an RDMA write of a counter
 * block. Operations that lack credits or send-queue room wait in an in-order backlog.
 *
 * <p><b>Faults</b>: the connection fails when the peer's {@link Liveness} socket closes (its
 * process exited or closed its transport: known within milliseconds) or when a work request fails
 * (e.g. retry exceeded because the peer's host vanished; probed by a zero-length write after a
 * second without completions). Its QPs then go to ERROR, a drain marker flushes everything
 * posted, and only then are the QPs, CQ and control region destroyed, so the NIC never touches
 * memory that is freed afterwards.
 *
 * <p><b>A peer's clean close</b> is no fault for what it finished: a transport closing without one
 * first waits until its peers acknowledged everything it posted ({@link #fenceForClose}), so its
 * CTS entries and last writes are in this side's memory when its liveness socket says
 * {@link Liveness#CLOSED_CLEANLY} and closes. This side then still takes the acknowledgements of
 * its own last writes, which the peer's device sent before its process saw them but which may
 * arrive after the socket's end (for at most {@link #ackGraceNanos}), so that a send the peer
 * received (e.g. its last step of a barrier before it closed) completes instead of failing. An
 * acknowledgement lost on the wire is retransmitted by nobody once the peer's queue pairs are
 * gone: a send whose receive's CTS arrived (the peer took it, and closed without a fault) and
 * whose work requests were posted then completes when the wait ends, as a send's completion
 * promises no more than that its buffer is free again. What is pending after that can never
 * complete and fails, naming the peer's close.
 */
final class VerbsConnection implements Connection, SendQueue.Retirement {
    private static final System.Logger LOG = System.getLogger(VerbsConnection.class.getName());
    static final int CTS_DEPTH = 128;
    /** Receive work requests per QP (a power of two). */
    static final int RECV_DEPTH = 128;
    /**
     * Slots of the ring of user immediates (a power of two): the values of the peer's writes that
     * the application has not polled, at most (as the other providers hold at most as many); the
     * peer's next write with an immediate waits in its backlog until this side polls.
     */
    static final int USER_RING = 1024;
    /**
     * Slots of each side's eager ring, and the largest isend that travels eagerly (see the class
     * comment): 16 KiB + 64 B holds a collective's small-vector message whole (a 32-byte
     * descriptor and up to 16 KiB of payload, the bound of the collectives' one-exchange
     * recursive doubling), so none of them waits for a rendezvous; 32 slots make a credit report
     * (due once a quarter is freed) one packet per 8 messages; 2 x 32 x 16.1 KiB = 1 MiB of
     * registered memory per connection.
     */
    static final int EAGER_SLOTS = 32;
    static final int EAGER_BYTES = 16 * 1024 + 64;
    private static final long KEEPALIVE_NANOS = 1_000_000_000L;
    private static final long DRAIN_NANOS = 2_000_000_000L;
    /** How often the peer's {@link Liveness} socket is read: a system call, so not on every pass. */
    private static final long LIVENESS_INTERVAL_NANOS = 10_000_000L;
    /**
     * Inline data asked of a queue pair, most first: 256 bytes take an eager message that carries
     * a CTS (80-byte header) with up to 176 bytes of payload, so a small message's packet leaves
     * without the NIC reading its slot; providers that refuse that get 64 bytes (CTS entries,
     * credit reports) or none.
     */
    private static final int[] INLINE_CHOICES = {256, 64, 0};
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final VerbsTransport transport;
    private final RequestTable requests;
    final int peer;
    final int qps;
    final ControlLayout layout;
    private final Arena controlArena;
    private final MemorySegment control;
    private final MemoryRegion controlMr;
    private final long controlAddress;
    private final CompletionQueue cq;
    final SendQueue[] sends;
    private final RecvWorkRequests recvs;
    private final WorkCompletions wcs;
    private final int[] repostDue;
    private final int[] psns;
    final Credits credits;
    private final ConnectionDescriptor local;
    private long peerControl;
    private int peerControlRkey;
    private long peerMailbox;
    private int peerMailboxRkey;
    TransportException failure;
    private boolean released;

    // Two-sided matching, as at the sender: sends waiting for a CTS, CTSs waiting for a send.
    private final LongRing pendingSends = new LongRing(64);
    private int[] ctsTag = new int[16];
    private long[] ctsAddress = new long[16];
    private long[] ctsCapacity = new long[16];
    private int[] ctsRkey = new int[16];
    private int[] ctsSlot = new int[16];
    private int[] ctsGeneration = new int[16];
    private int ctsCount;
    private long ctsConsumed;
    private final LongRing ctsToWrite = new LongRing(64);
    /**
     * The staging slot of the last eager message, while its write waits in QP 0's batch (no
     * doorbell since: {@link #openEagerDoorbell}) carrying no CTS; -1 if none. Its bytes are
     * read by the NIC only after the doorbell, so a CTS may still be put into its header.
     */
    private long openEager = -1;
    private long openEagerDoorbell;
    private final LongRing backlog = new LongRing(64);
    private int rotation;

    // Eager messages, at the receiver: receives no message has claimed yet (ids, in the order
    // posted), messages that arrived before their receive (ring indexes, in arrival order), and
    // which ring slots are free, so that slots go back to the peer in ring order.
    private final LongRing unclaimedReceives = new LongRing(64);
    /** Length of {@link #unclaimedReceives} after its last compaction. */
    private int unclaimedAfterCompaction;
    private final LongRing unexpected = new LongRing(EAGER_SLOTS);
    private final boolean[] eagerSlotDone = new boolean[EAGER_SLOTS];
    private long eagerFreed;
    /** Eager messages arrived: they come in ring order, on QP 0 alone, never more than the slots ahead of those freed. */
    private long eagerArrived;

    // Immediates of the peer's one-sided writes: parts seen per slot of the last RECV_DEPTH writes,
    // writes whose every part arrived (their values wait in the ring), and values polled.
    private final int[] ringSeen = new int[RECV_DEPTH];
    private long ringDelivered;
    private long ringPolled;
    /** The values delivered and not polled when the connection was released (its ring went with it). */
    private LongRing unpolledAtRelease;
    /** The length of each eager slot's message, read once, when it arrived, and checked. */
    private final long[] eagerLength = new long[EAGER_SLOTS];
    private long lastActivity = System.nanoTime();
    private Liveness.Watch watch;
    private long nextLivenessCheck;
    /**
     * How long a clean close of this side waits for its peers to acknowledge what it posted, and
     * how long, after a peer's clean close, this side waits for the acknowledgements of what it
     * had posted to that peer: two local ACK timeouts (4.096 us x 2^timeout each, the
     * retransmission period), so that one lost packet is recovered by a retransmission while the
     * peer's queue pairs still live; an acknowledgement that is not lost comes one round trip
     * behind its data. Reached only when the acknowledgement is lost for good (the peer's queue
     * pairs are gone) or the peer never received the data (posted after it left).
     */
    static long ackGraceNanos(int ibTimeout) {
        // timeout 0 is "wait forever" in the specification: the floor bounds it here as well
        long period = 4096L << Math.min(ibTimeout, 31);
        return Math.clamp(2 * period, 100_000_000L, 30_000_000_000L);
    }

    /** Whether the peer closed its transport without a fault ({@link Liveness#CLOSED_CLEANLY}). */
    private boolean peerClosed;
    /** Whether the peer's clean close left requests to or from it that could not complete: a fault after all. */
    private boolean peerLeftPending;
    /** Until when, after the peer's clean close, acknowledgements of this side's writes are awaited. */
    private long peerClosedGraceEnd;

    VerbsConnection(VerbsTransport transport, int peer) {
        this.transport = transport;
        this.requests = transport.requests;
        this.peer = peer;
        VerbsDevice device = transport.device;
        this.qps = transport.config.ibQpsPerConnection();
        this.layout = new ControlLayout(qps, CTS_DEPTH, USER_RING, EAGER_SLOTS, EAGER_BYTES);
        int sqDepth = Math.min(device.attributes.maxQpWr(),
                Math.max(256, 2 * transport.config.batchSize() + transport.config.signalInterval() + 8));
        int rqDepth = RECV_DEPTH + 1;
        int cqEntries = Math.min(device.attributes.maxCqe(), qps * (sqDepth + rqDepth + 2));
        this.controlArena = Arena.ofShared();
        this.sends = new SendQueue[qps];
        this.repostDue = new int[qps];
        this.psns = new int[qps];
        this.credits = new Credits(qps, RECV_DEPTH, CTS_DEPTH, EAGER_SLOTS, USER_RING);
        CompletionQueue createdCq = null;
        MemoryRegion createdMr = null;
        RecvWorkRequests createdRecvs = null;
        WorkCompletions createdWcs = null;
        QueuePair unowned = null; // created, not yet in sends[], whose QPs the clean-up below closes
        try {
            this.control = controlArena.allocate(layout.size, 64);
            this.controlAddress = control.address();
            createdMr = device.pd.register(control, io.rdma4j.verbs.Access.LOCAL_WRITE
                    | io.rdma4j.verbs.Access.REMOTE_WRITE | io.rdma4j.verbs.Access.REMOTE_READ);
            createdCq = device.context.createCompletionQueue(cqEntries);
            createdRecvs = new RecvWorkRequests(RECV_DEPTH, 1);
            createdWcs = new WorkCompletions(32);
            int sendDepth = sendDepth(sqDepth, createdCq.capacity(), qps, rqDepth);
            int[] qpns = new int[qps];
            for (int q = 0; q < qps; q++) {
                QueuePair qp = createQp(device, createdCq, sqDepth, rqDepth, peer);
                unowned = qp;
                qp.init(device.rc);
                sends[q] = new SendQueue(q, qp, sendDepth, transport.config.batchSize(), transport.config.signalInterval());
                unowned = null;
                qpns[q] = qp.qpNumber();
                psns[q] = RANDOM.nextInt(1 << 24);
            }
            this.controlMr = createdMr;
            this.cq = createdCq;
            this.recvs = createdRecvs;
            this.wcs = createdWcs;
            for (int q = 0; q < qps; q++) {
                postReceives(q, RECV_DEPTH);
            }
            this.local = new ConnectionDescriptor(transport.rank(), qpns, psns, device.lid(),
                    device.gid == null ? null : device.gid.gid().raw(), device.mtu.bytes(), CTS_DEPTH, USER_RING,
                    controlAddress, controlMr.rkey(), transport.mailboxAddress(), transport.mailboxRkey(),
                    transport.liveness.host(), transport.liveness.port());
        } catch (RuntimeException | Error e) { // an Error too: native memory that could not be had
            // every step runs: a QP left open would keep its CQ, PD and device context alive too
            Teardown alsoFailed = new Teardown();
            alsoFailed.close(unowned);
            for (SendQueue s : sends) {
                if (s != null) {
                    alsoFailed.close(s.qp, s);
                }
            }
            alsoFailed.close(createdCq, createdMr, createdRecvs, createdWcs, controlArena::close);
            alsoFailed.addSuppressedTo(e);
            throw e;
        }
    }

    /**
     * The work requests a send queue may hold: what was asked for (a provider may grant more:
     * rxe gives 511 for 256) and what the shared CQ has room for, since every signalled send and
     * every posted receive of the connection's queue pairs may hold a completion at once; less
     * one, kept for the drain marker.
     */
    static int sendDepth(int requested, int cqCapacity, int qps, int receiveDepth) {
        int depth = Math.min(requested, cqCapacity / qps - receiveDepth - 1) - 1;
        if (depth < 1) {
            throw new TransportException(-1, "a completion queue of " + cqCapacity + " entries leaves no room for sends on "
                    + qps + " queue pairs of " + receiveDepth + " receives each");
        }
        return depth;
    }

    /**
     * An RC queue pair with the most inline data of {@link #INLINE_CHOICES} the provider grants
     * (staged sources work without any); the errors of every choice when none works.
     */
    private static QueuePair createQp(VerbsDevice device, CompletionQueue cq, int sqDepth, int rqDepth, int peer) {
        RuntimeException refused = null;
        for (int inline : INLINE_CHOICES) {
            try {
                QueuePair qp = device.pd.createQueuePair(QpType.RC, cq, cq, new QpCapabilities(sqDepth, rqDepth, 1, 1, inline));
                if (refused != null) {
                    LOG.log(Level.INFO, "queue pair to peer " + peer + " created with " + inline
                            + " bytes of inline data, refused with more: " + refused.getMessage());
                }
                return qp;
            } catch (RuntimeException e) {
                if (refused == null) {
                    refused = e;
                } else {
                    refused.addSuppressed(e);
                }
            }
        }
        throw new TransportException(peer, "could not create an RC queue pair to peer " + peer + " (send queue " + sqDepth
                + ", receive queue " + rqDepth + ") with any of " + Arrays.toString(INLINE_CHOICES)
                + " bytes of inline data: " + refused.getMessage(), refused);
    }

    ConnectionDescriptor descriptor() {
        return local;
    }

    /** For tests: the entries of the connection's completion queue. */
    int completionQueueCapacity() {
        return cq.capacity();
    }

    /** RTR and RTS towards the peer's published endpoint; {@code watch} (may be null) then tells when the peer is gone. */
    void connect(ConnectionDescriptor remote, Liveness.Watch watch) {
        remote.checkCompatible(peer, local);
        RcParams p = transport.device.rc.toBuilder().mtu(VerbsDevice.common(transport.device.mtu, remote.mtuBytes()))
                .build();
        Gid gid = remote.gid() == null ? null : new Gid(remote.gid());
        for (int q = 0; q < qps; q++) {
            QpEndpoint ep = new QpEndpoint(remote.qpNumbers()[q], remote.psns()[q], remote.lid(), gid);
            sends[q].qp.rtr(p, ep).rts(p, psns[q]);
        }
        peerControl = remote.controlAddress();
        peerControlRkey = remote.controlRkey();
        peerMailbox = remote.mailboxAddress();
        peerMailboxRkey = remote.mailboxRkey();
        lastActivity = System.nanoTime();
        nextLivenessCheck = lastActivity;
        this.watch = watch;
    }

    // ---- Connection API, delegated to the transport (which holds the lock).

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
    public long write(RegisteredBuffer source, long sourceOffset, RemoteBuffer target, long targetOffset, long length,
                      long immediate) {
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

    // ---- Starting requests (the transport allocated and validated the slot).

    void startSend(int s) {
        PathTrace.event(PathTrace.SEND_START, requests.length[s]);
        consumeCts();
        int tag = requests.tag[s];
        for (int i = 0; i < ctsCount; i++) {
            if (ctsTag[i] == tag) {
                match(s, i);
                removeCts(i);
                issueBacklog();
                return;
            }
        }
        if (backlog.isEmpty() && eagerFits(s) && !rendezvousWaiting(tag)) {
            postEager(s, 2); // done once its receive's CTS arrived and its write was acknowledged
            requests.eagerSend[s] = true;
        }
        pendingSends.add(requests.id(s));
    }

    void startReceive(int s) {
        PathTrace.event(PathTrace.RECV_START, requests.length[s]);
        transport.setMailboxValue(s, requests.length[s]); // the size of a send that fills it (see issueSend)
        requests.partsLeft[s] = qps;
        requests.exposed[s] = true; // its CTS may sit in a batch from now on
        long early = takeUnexpected(requests.tag[s]);
        requests.eagerIndex[s] = early;
        if (early < 0) {
            requests.unclaimed[s] = true;
            pruneClaimedReceives();
            compactUnclaimedReceives();
            unclaimedReceives.add(requests.id(s));
        }
        ctsToWrite.add(requests.id(s));
        if (openEagerSlot() >= 0) {
            writeCts();
        }
    }

    /** A write, read or matched send: issued now if resources allow, else after those queued before it. */
    void startOneSided(int s) {
        backlog.add(requests.id(s));
        issueBacklog();
    }

    /** The oldest value delivered and not polled, read from its ring slot, which the peer may then write again. */
    long pollImmediateValue() {
        if (unpolledAtRelease != null) {
            return unpolledAtRelease.isEmpty() ? NO_IMMEDIATE : unpolledAtRelease.poll();
        }
        if (ringPolled == ringDelivered) {
            return NO_IMMEDIATE;
        }
        long value = CtsEntry.acquire(control, layout.immSlot(layout.immIn, ringPolled)) & 0xFFFF_FFFFL;
        ringPolled++;
        credits.polledImmediate();
        return value;
    }

    boolean hasImmediate() {
        return unpolledAtRelease != null ? !unpolledAtRelease.isEmpty() : ringPolled != ringDelivered;
    }

    // ---- Progress.

    /** Completions, CTS entries, credits, backlog, keepalive, then our CTS entries and one doorbell per QP. */
    int progress() {
        if (failure != null) {
            return 0;
        }
        // one clock read per pass for the liveness check and the keepalive (a read costs about as
        // much as a pass that finds nothing)
        long now = System.nanoTime();
        int work = pollCompletions();
        if (work > 0) {
            lastActivity = now;
        }
        checkLiveness(now);
        return work + advance(now, true);
    }

    /**
     * A flush: the doorbells, after what frees queue room and credits (completions, CTS entries,
     * credit reports) let the requests queued behind them go out, so that flushing alone, without
     * waiting on a request, sends everything; no liveness check and no keepalive probe.
     */
    int flushPass() {
        if (failure != null) {
            return 0;
        }
        int work = pollCompletions();
        if (work > 0) {
            lastActivity = System.nanoTime(); // the peer answered: no keepalive probe due for a while
        }
        return work + advance(0, false);
    }

    /** The part of a pass after the completions: CTS entries, credits, backlog, then our doorbells. */
    private int advance(long now, boolean probe) {
        int work = consumeCts();
        if (peerClosed) {
            settleWithClosedPeer(); // and nothing posted to a peer that left
            return work;
        }
        credits.observe(control, layout.creditsIn);
        work += issueBacklog();
        if (probe) {
            keepalive(now);
        }
        return work + flushAll();
    }

    private int pollCompletions() {
        int total = 0;
        for (int round = 0; round < 8; round++) {
            int n = cq.poll(wcs);
            for (int i = 0; i < n; i++) {
                onCompletion(i);
            }
            total += n;
            if (n < wcs.capacity()) {
                break;
            }
        }
        return total;
    }

    /**
     * Fails the connection once the peer's liveness socket is closed, unless the peer said it
     * closed cleanly (then {@link #settleWithClosedPeer} decides). Completions first: whatever the
     * peer finished before it left was acknowledged by this side's device, so its completions are
     * in the CQ before the socket closes, and they must complete their requests, not fail them.
     */
    private void checkLiveness(long now) {
        if (watch == null || peerClosed) {
            return;
        }
        if (now - nextLivenessCheck < 0) {
            return;
        }
        nextLivenessCheck = now + LIVENESS_INTERVAL_NANOS;
        if (watch.peerGone()) {
            while (pollCompletions() > 0) {
                // take every completion that arrived before the peer left
            }
            if (watch.closedCleanly()) {
                onPeerClosed(now);
                return;
            }
            int lost = watch.lostFirst();
            if (lost >= 0 && lost != peer && lost != transport.rank() && lost < transport.size()) {
                throw new TransportException(lost, "peer " + peer + " closed its transport after losing rank " + lost
                        + " first (its liveness socket to rank " + transport.rank() + " said so and closed)");
            }
            throw new TransportException(peer, "peer " + peer + " is gone: its process exited or aborted its transport"
                    + " (its liveness socket to rank " + transport.rank() + " closed)");
        }
    }

    /**
     * The peer said it closed cleanly: from now on nothing is posted to it, and work requests
     * batched but not posted are dropped, failing their requests (they never left).
     */
    private void onPeerClosed(long now) {
        peerClosed = true;
        peerClosedGraceEnd = now + transport.ackGraceNanos;
        for (SendQueue sq : sends) {
            sq.dropBatch((slot, ok) -> {
                if (requests.pending(slot) && requests.peer[slot] == peer) {
                    peerLeftPending = true;
                    requests.fail(slot, new TransportException(peer, requests.describe(slot) + " failed: peer " + peer
                            + " closed its transport before this side posted it"));
                }
            });
        }
    }

    /**
     * After the peer's clean close: once no request waits for the completion of a work request
     * this side posted (or {@link #ackGraceNanos} passed), fails the connection, and with it
     * whatever is still pending to or from the peer, which nothing can complete any more.
     */
    private void settleWithClosedPeer() {
        if (awaitingCompletions() && System.nanoTime() - peerClosedGraceEnd < 0) {
            return;
        }
        int unacknowledged = 0;
        for (int s = 0; s < requests.capacity; s++) {
            if (requests.pending(s) && requests.peer[s] == peer) {
                if (requests.kind[s] == RequestTable.SEND && requests.taken[s] && requests.exposed[s]
                        && !requests.failWhenRetired[s]) {
                    requests.complete(s, requests.length[s]); // posted, and the peer took it
                    unacknowledged++;
                } else {
                    peerLeftPending = true;
                }
            }
        }
        throw new TransportException(peer, "peer " + peer + " closed its transport (it said so on its liveness socket"
                + " to rank " + transport.rank() + ")" + (unacknowledged > 0 ? "; " + unacknowledged
                + " send(s) it had taken completed without the acknowledgement of their last write" : ""));
    }

    /** Whether some request waits for a work request of this connection to complete. */
    private boolean awaitingCompletions() {
        for (SendQueue sq : sends) {
            if (sq.marksOutstanding()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Before a clean close of this side: posts what is batched and a signalled zero-length write
     * on every QP, whose completion retires everything posted before it ({@link #acknowledged}).
     */
    void fenceForClose() {
        if (failure != null || peerClosed) {
            return;
        }
        flushAll();
        addMissingFences();
    }

    /** A fence on every QP that has none yet and has room now (a full queue gets its fence later). */
    private void addMissingFences() {
        for (SendQueue sq : sends) {
            if (!sq.fenced && sq.free() >= 1) {
                addProbe(sq);
                sq.flush();
                sq.fenced = true;
            }
        }
    }

    /** A signalled zero-length write: its completion says the peer's QP took everything before it. */
    private void addProbe(SendQueue sq) {
        sq.add(SendOpcode.RDMA_WRITE, 0, 0, 0, peerControl + layout.keepalive, peerControlRkey, 0, -1, true);
    }

    /**
     * During this side's clean close: whether the peer acknowledged everything this side posted
     * (completions taken now), or can acknowledge nothing more: the connection failed, or the
     * peer's liveness socket closed.
     *
     * @throws TransportException naming the peer when it died meanwhile (its socket closed without
     *                            a clean close): a rank this side lost, which it tells the others
     */
    boolean acknowledged() {
        if (failure != null || peerClosed) {
            return true;
        }
        if (watch != null && watch.peerGone()) {
            if (!watch.closedCleanly()) {
                throw new TransportException(peer, "peer " + peer + " died while rank " + transport.rank()
                        + " closed its transport");
            }
            peerClosed = true; // what fails after this is no rank this side lost
            return true;
        }
        pollCompletions();
        addMissingFences();
        return drained();
    }

    private void onCompletion(int i) {
        long wrId = wcs.wrId(i);
        boolean ok = wcs.isSuccess(i);
        if ((wrId & SendQueue.RECEIVE) != 0) {
            int q = (int) (wrId & 0xFFFF);
            if (!ok) {
                throw completionFailure("a receive on", q, i);
            }
            repostDue[q]++;
            if (!wcs.hasImmData(i)) {
                throw protocol("a message without immediate arrived on QP " + q);
            }
            PathTrace.event(PathTrace.CQE_RECV, wcs.immData(i));
            onImmediate(wcs.immData(i));
        } else {
            int q = SendQueue.qpIndexOf(wrId);
            PathTrace.event(PathTrace.CQE_SEND, wrId);
            sends[q].retire(wrId, ok, this);
            if (!ok) {
                throw completionFailure("a work request on", q, i);
            }
        }
    }

    private TransportException completionFailure(String what, int q, int i) {
        int status = wcs.status(i);
        return new TransportException(peer, what + " QP " + sends[q].qp.qpNumber() + " to peer " + peer
                + " completed with status " + status + " (" + WorkCompletions.describeStatus(status) + ", vendor error 0x"
                + Integer.toHexString(wcs.vendorError(i)) + ")" + (WorkCompletions.isRetryExceeded(status)
                ? ": peer " + peer + " is unreachable or dead" : ""));
    }

    @Override
    public void retired(int slot, boolean success) {
        if (!success || !requests.pending(slot) || requests.peer[slot] != peer) {
            return; // a failing connection fails its requests itself
        }
        if (--requests.partsLeft[slot] > 0) {
            return;
        }
        if (requests.failWhenRetired[slot]) {
            requests.fail(slot, new TransportException(peer, requests.describe(slot) + " failed: the matching irecv offered only "
                    + requests.remoteCapacity[slot] + " bytes"));
        } else {
            requests.complete(slot, requests.length[slot]);
            PathTrace.event(PathTrace.SEND_DONE, slot);
        }
    }

    private void onImmediate(int imm) {
        switch (Immediate.type(imm)) {
            case Immediate.DATA -> {
                int s = receiveSlot(imm);
                requests.unclaimed[s] = false;
                if (--requests.partsLeft[s] == 0) {
                    long size = transport.mailboxValue(s);
                    if (size < 0 || size > requests.length[s]) {
                        throw protocol("peer " + peer + " reported " + size + " bytes for a receive of " + requests.length[s]);
                    }
                    requests.complete(s, size);
                    PathTrace.event(PathTrace.RECV_DONE, s);
                }
            }
            case Immediate.ERROR -> {
                int s = receiveSlot(imm);
                requests.unclaimed[s] = false;
                failTooSmall(s, transport.mailboxValue(s));
            }
            case Immediate.USER -> {
                // a part of write k goes out only after every QP's part of write k - RECV_DEPTH
                // came in (its credits): one outside that window would alias a slot in use
                int index = Immediate.ringIndex(imm);
                int i = index % RECV_DEPTH;
                if (Immediate.ahead(index, ringDelivered) >= RECV_DEPTH || ringSeen[i] >= qps) {
                    throw protocol("a write's immediate " + index + " outside the ring's window (" + ringDelivered
                            + " delivered, " + ringSeen[i] + " of " + qps + " parts of that slot seen)");
                }
                ringSeen[i]++;
                deliverImmediates();
            }
            case Immediate.EAGER -> onEager(Immediate.ringIndex(imm));
            default -> throw protocol("unknown immediate 0x" + Integer.toHexString(imm));
        }
    }

    /** Fails receive {@code s}: the matching isend has {@code sent} bytes, more than it offered. */
    private void failTooSmall(int s, long sent) {
        requests.fail(s, new TransportException(peer, requests.describe(s) + " failed: the matching isend of peer "
                + peer + " has " + sent + " bytes, more than this receive offered"));
    }

    private int receiveSlot(int imm) {
        int s = Immediate.slot(imm);
        if (s >= requests.capacity || !requests.pending(s) || requests.kind[s] != RequestTable.RECV
                || requests.peer[s] != peer || (requests.generation[s] & Immediate.GENERATION_MASK) != Immediate.generation(imm)) {
            throw protocol("data arrived for receive slot " + s + ", which is not a pending receive from peer " + peer);
        }
        return s;
    }

    /** Delivers immediates in ring order, each once all QPs' parts of its write arrived. */
    private void deliverImmediates() {
        while (true) {
            int i = (int) (ringDelivered % RECV_DEPTH);
            if (ringSeen[i] < qps) {
                return;
            }
            ringSeen[i] = 0;
            ringDelivered++; // its value stays in its slot until polled
        }
    }

    private TransportException protocol(String message) {
        return new TransportException(peer, "protocol violation on the connection to peer " + peer + ": " + message);
    }

    /** Takes every CTS entry the peer published, in order, matching them with waiting sends. */
    private int consumeCts() {
        int n = 0;
        while (true) {
            long at = layout.ctsEntry(layout.ctsIn, ctsConsumed);
            if (!CtsEntry.holds(control, at, ctsConsumed + 1)) {
                return n;
            }
            int tag = CtsEntry.tag(control, at);
            int slot = CtsEntry.slot(control, at);
            // each names a receive of the peer's, whose request table holds at most MAX_SLOTS
            if (slot < 0 || slot >= Immediate.MAX_SLOTS || ctsCount == Immediate.MAX_SLOTS) {
                throw protocol("a clear-to-send for receive slot " + slot + " with " + ctsCount
                        + " of the peer's receives unmatched (at most " + Immediate.MAX_SLOTS + ")");
            }
            addCts(tag, CtsEntry.address(control, at), CtsEntry.capacity(control, at), CtsEntry.rkey(control, at),
                    slot, CtsEntry.generation(control, at));
            ctsConsumed++;
            PathTrace.event(PathTrace.CTS_IN, tag);
            credits.consumedCts();
            n++;
            int s = takePendingSend(tag);
            if (s >= 0) {
                if (requests.eagerSend[s]) {
                    finishEagerSend(s, ctsCapacity[ctsCount - 1]);
                } else {
                    match(s, ctsCount - 1);
                }
                removeCts(ctsCount - 1);
            }
        }
    }

    /** Unlinks the oldest pending send of {@code tag} (dropping ids that failed meanwhile), or -1. */
    private int takePendingSend(int tag) {
        return unlinkOldest(pendingSends, tag, null);
    }

    /**
     * Unlinks from {@code ids} the oldest pending request of {@code tag} (with {@code wanted}: one
     * whose flag is still set), dropping ids that are no longer pending (or wanted); -1 if none.
     */
    private int unlinkOldest(LongRing ids, int tag, boolean[] wanted) {
        int n = ids.size();
        int found = -1;
        for (int i = 0; i < n; i++) {
            long id = ids.poll();
            int s = requests.pendingSlot(id);
            if (s < 0 || (wanted != null && !wanted[s])) {
                continue;
            }
            if (found < 0 && requests.tag[s] == tag) {
                found = s;
            } else {
                ids.add(id);
            }
        }
        return found;
    }

    private void match(int s, int cts) {
        requests.taken[s] = true;
        requests.remoteAddress[s] = ctsAddress[cts];
        requests.remoteCapacity[s] = ctsCapacity[cts];
        requests.remoteKey[s] = ctsRkey[cts];
        requests.remoteSlot[s] = ctsSlot[cts];
        requests.remoteGeneration[s] = ctsGeneration[cts];
        backlog.add(requests.id(s));
    }

    private void addCts(int tag, long address, long capacity, int rkey, int slot, int generation) {
        if (ctsCount == ctsTag.length) {
            int n = ctsCount * 2;
            ctsTag = Arrays.copyOf(ctsTag, n);
            ctsAddress = Arrays.copyOf(ctsAddress, n);
            ctsCapacity = Arrays.copyOf(ctsCapacity, n);
            ctsRkey = Arrays.copyOf(ctsRkey, n);
            ctsSlot = Arrays.copyOf(ctsSlot, n);
            ctsGeneration = Arrays.copyOf(ctsGeneration, n);
        }
        ctsTag[ctsCount] = tag;
        ctsAddress[ctsCount] = address;
        ctsCapacity[ctsCount] = capacity;
        ctsRkey[ctsCount] = rkey;
        ctsSlot[ctsCount] = slot;
        ctsGeneration[ctsCount] = generation;
        ctsCount++;
    }

    private void removeCts(int i) {
        int tail = ctsCount - i - 1;
        System.arraycopy(ctsTag, i + 1, ctsTag, i, tail);
        System.arraycopy(ctsAddress, i + 1, ctsAddress, i, tail);
        System.arraycopy(ctsCapacity, i + 1, ctsCapacity, i, tail);
        System.arraycopy(ctsRkey, i + 1, ctsRkey, i, tail);
        System.arraycopy(ctsSlot, i + 1, ctsSlot, i, tail);
        System.arraycopy(ctsGeneration, i + 1, ctsGeneration, i, tail);
        ctsCount--;
    }

    // ---- Eager messages.

    /**
     * Whether isend {@code s} can go eagerly now: small enough, a free slot in the peer's eager
     * ring, a receive credit and send-queue room on QP 0. Without a slot it takes the rendezvous
     * path instead, so a ring held by messages nobody receives yet never blocks a send.
     */
    private boolean eagerFits(int s) {
        return requests.length[s] <= layout.eagerBytes && credits.eagerSlotFree() && credits.immediateCredit(0)
                && sends[0].free() >= 1;
    }

    /** Whether a send of {@code tag} waits for its CTS unsent: a later one must not overtake it eagerly. */
    private boolean rendezvousWaiting(int tag) {
        for (int i = 0, n = pendingSends.size(); i < n; i++) {
            int p = requests.pendingSlot(pendingSends.peek(i));
            if (p >= 0 && requests.tag[p] == tag && !requests.eagerSend[p]) {
                return true;
            }
        }
        return false;
    }

    /**
     * Copies isend {@code s} behind its header into the next staging slot and writes both into the
     * peer's eager ring with one write-with-immediate on QP 0. The staging slot is written again
     * only after the peer freed the ring slot, i.e. after the NIC read it. The send completes after
     * {@code events}: the write's completion (so a completed send is in the peer's memory, even if
     * this process exits right after), and, without a CTS in hand, that CTS.
     */
    private void postEager(int s, int events) {
        long k = credits.takeEager();
        long staged = layout.eagerSlot(layout.eagerOut, k);
        long length = requests.length[s];
        EagerHeader.write(control, staged, requests.tag[s], length);
        MemorySegment.copy(requests.buffer[s].forCopy(), requests.offset[s], control, staged + EagerHeader.BYTES, length);
        // With a receive's CTS queued, the header is complete now: it carries that CTS, and the
        // message goes inline if it fits (the provider copies its bytes at the add: on a NIC no
        // DMA read of the slot before the packet leaves). Without one it stays open, not inline,
        // until the doorbell, so that a receive posted before then still rides in it.
        boolean inline = sends[0].inlines(EagerHeader.BYTES + length) && writeNextCts(staged);
        credits.takeImmediate(0);
        sends[0].add(SendOpcode.RDMA_WRITE_WITH_IMM, controlAddress + staged, EagerHeader.BYTES + length, controlMr.lkey(),
                peerControl + layout.eagerSlot(layout.eagerIn, k), peerControlRkey, Immediate.eager(k), s, false, inline);
        requests.partsLeft[s] = events;
        requests.exposed[s] = true; // a completion will name its slot
        if (inline) {
            openEager = -1;
        } else {
            openEager = staged;
            openEagerDoorbell = sends[0].doorbells();
            if (!ctsToWrite.isEmpty()) {
                writeCts();
            }
        }
    }

    /** {@link #openEager} if that message is still unposted, else -1. */
    private long openEagerSlot() {
        if (openEager >= 0 && sends[0].doorbells() != openEagerDoorbell) {
            openEager = -1;
        }
        return openEager;
    }

    /** A matched send that fits goes eagerly: one write instead of data plus size. */
    private boolean issueEager(int s) {
        postEager(s, 1);
        return true;
    }

    /** The CTS of the receive an eager isend went to arrived: it tells whether that receive held it. */
    private void finishEagerSend(int s, long capacity) {
        requests.taken[s] = true;
        if (requests.length[s] > capacity) {
            // fails once its write retired too: the slot must not be reused under that completion
            requests.remoteCapacity[s] = capacity;
            requests.failWhenRetired[s] = true;
        }
        retired(s, true); // one of its two events
    }

    /** An eager message arrived in ring slot {@code index}: to the oldest unclaimed receive of its tag, else kept. */
    private void onEager(int index) {
        if (Immediate.ahead(index, eagerArrived) != 0 || eagerArrived - eagerFreed >= EAGER_SLOTS) {
            throw protocol("eager message " + index + " where message " + (eagerArrived & Immediate.INDEX_MASK)
                    + " was due (" + (eagerArrived - eagerFreed) + " of " + EAGER_SLOTS + " slots held)");
        }
        long at = layout.eagerSlot(layout.eagerIn, index);
        long length = EagerHeader.length(control, at);
        if (length < 0 || length > layout.eagerBytes) {
            throw protocol("an eager message of " + length + " bytes in a slot of " + layout.eagerBytes);
        }
        eagerLength[index % EAGER_SLOTS] = length; // the peer's NIC could write the header again
        eagerArrived++;
        takeCarriedCts(at);
        int tag = EagerHeader.tag(control, at);
        int s = takeUnclaimedReceive(tag);
        if (s < 0) {
            unexpected.add(index);
        } else if (requests.ctsWritten[s]) {
            deliverEager(s, index);
        } else {
            requests.eagerIndex[s] = index; // taken once its CTS is written
        }
    }

    /**
     * Puts the CTS entry that the eager message at {@code at} carries (if any) into the fifo slot
     * the peer would have written it to; {@link #consumeCts} takes it from there in order.
     */
    private void takeCarriedCts(long at) {
        long sequence = EagerHeader.ctsSequence(control, at);
        if (sequence == 0) {
            return;
        }
        if (sequence <= ctsConsumed || sequence > ctsConsumed + layout.ctsDepth) {
            throw protocol("an eager message carried CTS " + sequence + " while " + ctsConsumed
                    + " were consumed and the fifo holds " + layout.ctsDepth);
        }
        MemorySegment.copy(control, at + EagerHeader.CTS, control, layout.ctsEntry(layout.ctsIn, sequence - 1), CtsEntry.BYTES);
    }

    /** Receive {@code s} takes the eager message in ring slot {@code index} (or fails if it is too small); the slot is freed. */
    private void deliverEager(int s, long index) {
        long at = layout.eagerSlot(layout.eagerIn, index);
        long length = eagerLength[(int) (index % EAGER_SLOTS)];
        if (length > requests.length[s]) {
            failTooSmall(s, length);
        } else {
            MemorySegment.copy(control, at + EagerHeader.BYTES, requests.buffer[s].forCopy(), requests.offset[s], length);
            requests.complete(s, length);
        }
        eagerSlotDone[(int) (index % EAGER_SLOTS)] = true;
        while (eagerSlotDone[(int) (eagerFreed % EAGER_SLOTS)]) {
            eagerSlotDone[(int) (eagerFreed % EAGER_SLOTS)] = false;
            eagerFreed++;
        }
        credits.eagerFreed(eagerFreed);
    }

    /** Unlinks the oldest pending receive of {@code tag} no message has claimed (dropping stale ids), or -1. */
    private int takeUnclaimedReceive(int tag) {
        int s = unlinkOldest(unclaimedReceives, tag, requests.unclaimed);
        if (s >= 0) {
            requests.unclaimed[s] = false;
        }
        return s;
    }

    /** The ring index of the oldest unexpected eager message of {@code tag}, unlinked, or -1. */
    private long takeUnexpected(int tag) {
        int n = unexpected.size();
        long found = -1;
        for (int i = 0; i < n; i++) {
            long index = unexpected.poll();
            if (found < 0 && EagerHeader.tag(control, layout.eagerSlot(layout.eagerIn, index)) == tag) {
                found = index;
            } else {
                unexpected.add(index);
            }
        }
        return found;
    }

    /**
     * Drops every id that is no longer an unclaimed receive, behind the head too, once the list
     * has doubled since the last time: a receive that stays unclaimed at the head (one posted
     * ahead for a message that comes much later) stops {@link #pruneClaimedReceives}, and with
     * only rendezvous messages (which clear the flag, not the list) arriving meanwhile, nothing
     * else would shorten it. Amortized constant per receive; keeps the order.
     */
    private void compactUnclaimedReceives() {
        int n = unclaimedReceives.size();
        if (n < Math.max(64, 2 * unclaimedAfterCompaction)) {
            return;
        }
        for (int i = 0; i < n; i++) {
            long id = unclaimedReceives.poll();
            int s = requests.pendingSlot(id);
            if (s >= 0 && requests.unclaimed[s]) {
                unclaimedReceives.add(id);
            }
        }
        unclaimedAfterCompaction = unclaimedReceives.size();
    }

    /** Drops ids at the head that are no longer unclaimed receives, so the list stays as short as what is open. */
    private void pruneClaimedReceives() {
        while (!unclaimedReceives.isEmpty()) {
            int s = requests.pendingSlot(unclaimedReceives.peek(0));
            if (s >= 0 && requests.unclaimed[s]) {
                return;
            }
            unclaimedReceives.poll();
        }
    }

    /**
     * Writes queued CTS entries into the peer's fifo while its window has room: the first into
     * the header of an unposted eager message if there is one, the others with a write each
     * while QP 0 has room.
     */
    private int writeCts() {
        int n = 0;
        while (writeNextCts(openEagerSlot())) {
            n++;
        }
        return n;
    }

    /**
     * Writes the oldest queued CTS entry into the eager header at {@code carrier}, or with a write
     * of its own if {@code carrier} is -1; false if none is queued or the window or QP 0 lacks room.
     */
    private boolean writeNextCts(long carrier) {
        while (!ctsToWrite.isEmpty()) {
            int s = requests.pendingSlot(ctsToWrite.peek(0));
            if (s < 0) {
                ctsToWrite.poll();
                continue;
            }
            if (!credits.ctsWindowOpen() || (carrier < 0 && sends[0].free() < 1)) {
                return false;
            }
            ctsToWrite.poll();
            long k = credits.takeCts();
            PathTrace.event(PathTrace.CTS_OUT, k);
            long staged = carrier >= 0 ? carrier + EagerHeader.CTS : layout.ctsEntry(layout.ctsOut, k);
            VerbsBuffer b = requests.buffer[s];
            CtsEntry.write(control, staged, k + 1, b.address() + requests.offset[s], requests.length[s], b.rkey,
                    requests.tag[s], s, requests.generation[s]);
            requests.ctsWritten[s] = true;
            if (carrier >= 0) {
                openEager = -1;
            } else {
                sends[0].add(SendOpcode.RDMA_WRITE, controlAddress + staged, CtsEntry.BYTES, controlMr.lkey(),
                        peerControl + layout.ctsEntry(layout.ctsIn, k), peerControlRkey, 0, -1, false);
            }
            if (requests.eagerIndex[s] >= 0) {
                deliverEager(s, requests.eagerIndex[s]); // its CTS completes the peer's eager isend
            }
            return true;
        }
        return false;
    }

    /** Issues backlog operations in order, stopping at the first that lacks credits or queue room. */
    private int issueBacklog() {
        int n = 0;
        while (!backlog.isEmpty()) {
            int s = requests.pendingSlot(backlog.peek(0));
            if (s >= 0 && !issue(s)) {
                return n;
            }
            backlog.poll();
            n++;
        }
        return n;
    }

    private boolean issue(int s) {
        return switch (requests.kind[s]) {
            case RequestTable.SEND -> requests.length[s] > requests.remoteCapacity[s] ? issueSendError(s)
                    : eagerFits(s) ? issueEager(s) : issueSend(s);
            case RequestTable.WRITE -> requests.immediate[s] == NO_IMMEDIATE
                    ? issueStriped(s, SendOpcode.RDMA_WRITE) : issueWriteWithImmediate(s);
            case RequestTable.READ -> issueStriped(s, SendOpcode.RDMA_READ);
            default -> throw new IllegalStateException("request kind " + requests.kind[s] + " in the backlog");
        };
    }

    /** Whether every QP has room for its part (or parts counted from {@code first}) plus {@code extra} each. */
    private boolean room(long size, int parts, int first, int extra) {
        for (int q = 0; q < qps; q++) {
            int j = Math.floorMod(q - first, qps);
            int need = (j < parts ? Striping.workRequests(Striping.partSize(size, parts, j)) : 0) + extra;
            if (sends[q].free() < need) {
                return false;
            }
        }
        return true;
    }

    /**
     * A send that fills its receive leaves the size where the receiver put it (its mailbox word
     * holds the capacity from {@link #startReceive}), so each QP's last data write carries that
     * QP's immediate itself, as NCCL's net_ib does: per QP one work request, one packet and one
     * ACK fewer than a separate write with immediate. A shorter send writes its size behind its data.
     */
    private boolean issueSend(int s) {
        long size = requests.length[s];
        int imm = Immediate.data(requests.remoteSlot[s], requests.remoteGeneration[s]);
        boolean fills = size == requests.remoteCapacity[s];
        int parts = postDataParts(s, fills ? SendOpcode.RDMA_WRITE_WITH_IMM : SendOpcode.RDMA_WRITE, fills ? imm : 0,
                fills ? s : -1);
        if (parts < 0) {
            return false;
        }
        PathTrace.event(PathTrace.ISSUE_SEND, s);
        transport.setOutboxValue(s, size);
        postImmediates(s, fills ? parts : 0, transport.outboxAddress(s), transport.mailboxLkey(),
                peerMailbox + 8L * requests.remoteSlot[s], peerMailboxRkey, imm);
        return true;
    }

    /**
     * If every QP has a credit and room for its parts of request s plus one write with immediate,
     * posts the parts, striped from QP 0 on, each part's last work request a {@code lastOp} with
     * {@code imm} and {@code mark}, and returns their number; else posts nothing and returns -1.
     */
    private int postDataParts(int s, SendOpcode lastOp, int imm, int mark) {
        long size = requests.length[s];
        int parts = Striping.parts(size, qps);
        if (!credits.immediateCreditOnEvery() || !room(size, parts, 0, 1)) {
            return -1;
        }
        VerbsBuffer b = requests.buffer[s];
        postParts(lastOp, size, parts, 0, b.address() + requests.offset[s], b.lkey, requests.remoteAddress[s],
                requests.remoteKey[s], imm, mark);
        return parts;
    }

    /**
     * One write with immediate per QP, each behind that QP's parts (so the receiver has all data
     * once it counted every QP's immediate); QP 0's carries the 8 bytes at {@code local} to {@code remote}.
     * QPs below {@code firstQp} carried theirs in their last data write: only their credit is taken.
     */
    private void postImmediates(int s, int firstQp, long local, int lkey, long remote, int rkey, int imm) {
        for (int q = 0; q < qps; q++) {
            credits.takeImmediate(q);
            if (q < firstQp) {
                continue;
            }
            if (q == 0) {
                sends[0].add(SendOpcode.RDMA_WRITE_WITH_IMM, local, 8, lkey, remote, rkey, imm, s, false);
            } else {
                sends[q].add(SendOpcode.RDMA_WRITE_WITH_IMM, 0, 0, 0, remote, rkey, imm, s, false);
            }
        }
        requests.partsLeft[s] = qps;
        requests.exposed[s] = true;
    }

    /** The receive is too small: tell the receiver (its request fails), and fail the send once that went out. */
    private boolean issueSendError(int s) {
        if (!credits.immediateCredit(0) || sends[0].free() < 1) {
            return false;
        }
        transport.setOutboxValue(s, requests.length[s]);
        credits.takeImmediate(0);
        sends[0].add(SendOpcode.RDMA_WRITE_WITH_IMM, transport.outboxAddress(s), 8, transport.mailboxLkey(),
                peerMailbox + 8L * requests.remoteSlot[s], peerMailboxRkey,
                Immediate.error(requests.remoteSlot[s], requests.remoteGeneration[s]), s, false);
        requests.partsLeft[s] = 1;
        requests.failWhenRetired[s] = true;
        requests.exposed[s] = true;
        return true;
    }

    /** A plain write or a read: parts over the QPs, starting at a rotating one; no immediate. */
    private boolean issueStriped(int s, SendOpcode op) {
        long size = requests.length[s];
        int parts = Striping.parts(size, qps);
        if (parts == 0) {
            requests.complete(s, 0);
            return true;
        }
        int first = rotation % qps;
        if (!room(size, parts, first, 0)) {
            return false;
        }
        rotation++;
        VerbsBuffer b = requests.buffer[s];
        postParts(op, size, parts, first, b.address() + requests.offset[s], b.lkey, requests.remoteAddress[s],
                requests.remoteKey[s], 0, s);
        requests.partsLeft[s] = parts;
        requests.exposed[s] = true;
        return true;
    }

    private boolean issueWriteWithImmediate(int s) {
        if (!credits.userRingFree() || postDataParts(s, SendOpcode.RDMA_WRITE, 0, -1) < 0) {
            return false; // the peer holds USER_RING values its application has not polled
        }
        long sequence = credits.takeUserImmediate();
        long staged = layout.immSlot(layout.immOut, sequence);
        control.set(LONG, staged, requests.immediate[s]);
        postImmediates(s, 0, controlAddress + staged, controlMr.lkey(), peerControl + layout.immSlot(layout.immIn, sequence),
                peerControlRkey, Immediate.user(sequence));
        return true;
    }

    /**
     * Posts part j of a message on QP {@code (first + j) % qps}; the last work request of each
     * part is a {@code lastOp} carrying {@code imm} and {@code mark}, the others are plain writes
     * (reads, when {@code lastOp} is a read).
     */
    private void postParts(SendOpcode lastOp, long size, int parts, int first, long local, int lkey, long remote,
                           int rkey, int imm, int mark) {
        SendOpcode op = lastOp == SendOpcode.RDMA_WRITE_WITH_IMM ? SendOpcode.RDMA_WRITE : lastOp;
        for (int j = 0; j < parts; j++) {
            SendQueue sq = sends[(first + j) % qps];
            long offset = Striping.partOffset(size, parts, j);
            long left = Striping.partSize(size, parts, j);
            while (left > 0) {
                long n = Math.min(left, Striping.MAX_WORK_REQUEST);
                left -= n;
                boolean last = left == 0;
                sq.add(last ? lastOp : op, local + offset, n, lkey, remote + offset, rkey, last ? imm : 0,
                        last ? mark : -1, false);
                offset += n;
            }
        }
    }

    private void keepalive(long now) {
        if (now - lastActivity > KEEPALIVE_NANOS && sends[0].free() >= 1) {
            // completes if the peer's QP is alive, else ends in RETRY_EXC_ERR, which fails this
            // connection and every request to the peer
            addProbe(sends[0]);
            lastActivity = now;
        }
    }

    /** Writes queued CTS entries, re-posts consumed receives, reports credits, and rings each QP's doorbell once. */
    int flushAll() {
        if (failure != null) {
            return 0;
        }
        int work = writeCts();
        for (int q = 0; q < qps; q++) {
            if (repostDue[q] > 0) {
                int n = repostDue[q];
                repostDue[q] = 0;
                postReceives(q, n);
                PathTrace.event(PathTrace.RECV_POSTED, n);
                credits.reposted(q, n);
            }
        }
        if (credits.reportDue() && sends[0].free() >= 1) {
            credits.writeReport(control, layout.creditsOut);
            PathTrace.event(PathTrace.CREDIT_REPORT, 0);
            sends[0].add(SendOpcode.RDMA_WRITE, controlAddress + layout.creditsOut, layout.creditsBytes(),
                    controlMr.lkey(), peerControl + layout.creditsIn, peerControlRkey, 0, -1, false);
        }
        for (SendQueue sq : sends) {
            sq.flush();
        }
        return work;
    }

    private void postReceives(int q, int n) {
        recvs.reset();
        for (int i = 0; i < n; i++) {
            recvs.add(SendQueue.RECEIVE | q);
        }
        sends[q].qp.postRecv(recvs);
    }

    /** Statistics for tests: work requests posted and doorbells rung on QP {@code q}. */
    long workRequestsPosted(int q) {
        return sends[q].workRequestsPosted();
    }

    long doorbells(int q) {
        return sends[q].doorbells();
    }

    long signalled(int q) {
        return sends[q].signalled();
    }

    // ---- Failure and release.

    /**
     * Moves the QPs to ERROR, waits (bounded) until the drain markers came back flushed, then destroys the QPs, CQ and control region. After this the NIC touches
     * no memory this connection ever handed it. Idempotent.
     */
    void release(TransportException cause) {
        if (failure == null) {
            failure = cause;
        }
        if (released) {
            return;
        }
        released = true;
        // values that arrived before the failure are still the application's to take, as on the
        // other providers; their ring is in the control region, which goes now
        LongRing unpolled = new LongRing((int) (ringDelivered - ringPolled));
        for (long v; (v = pollImmediateValue()) != NO_IMMEDIATE; ) {
            unpolled.add(v);
        }
        unpolledAtRelease = unpolled;
        Teardown teardown = new Teardown();
        boolean markers = true;
        for (SendQueue sq : sends) {
            try {
                sq.qp.toError();
                sq.postDrainMarker();
            } catch (RuntimeException e) {
                markers = false;
                teardown.failed(new TransportException(peer, "could not drain " + sq.qp.description(), e));
            }
        }
        if (markers && !drain()) {
            teardown.failed(new TransportException(peer, "flushed completions did not all arrive within "
                    + DRAIN_NANOS / 1_000_000 + " ms; its QPs were destroyed anyway"));
        }
        for (SendQueue sq : sends) {
            teardown.close(sq.qp, sq);
        }
        teardown.close(cq, controlMr, recvs, wcs, watch, controlArena::close);
        teardown.report(LOG, "connection to peer " + peer + " of rank " + transport.rank());
    }

    private boolean drain() {
        long deadline = System.nanoTime() + DRAIN_NANOS;
        while (!drained()) {
            int n;
            try {
                n = cq.poll(wcs);
            } catch (RuntimeException e) {
                return false;
            }
            for (int i = 0; i < n; i++) {
                long wrId = wcs.wrId(i);
                if ((wrId & SendQueue.RECEIVE) == 0) {
                    try {
                        sends[SendQueue.qpIndexOf(wrId)].retire(wrId, false, this);
                    } catch (RuntimeException e) {
                        return false;
                    }
                }
            }
            if (n == 0) {
                if (System.nanoTime() - deadline > 0) {
                    return false;
                }
                Thread.onSpinWait();
            }
        }
        return true;
    }

    /**
     * Whether every QP's send queue is flushed. Receives need no drain: they carry no scatter
     * list (a write-with-immediate lands where its sender aimed it), so a flushed receive touches
     * no memory, and an ERROR QP accepts no more incoming writes.
     */
    private boolean drained() {
        for (int q = 0; q < qps; q++) {
            if (!sends[q].idle()) {
                return false;
            }
        }
        return true;
    }

    boolean released() {
        return released;
    }

    /** Whether the peer closed its transport without a fault and left nothing pending here: not a rank this side lost. */
    boolean peerLeftCleanly() {
        return peerClosed && !peerLeftPending;
    }

    @Override
    public String toString() {
        return "VerbsConnection[rank " + transport.rank() + " -> peer " + peer + ", " + qps + " QPs"
                + (failure != null ? ", failed" : "") + "]";
    }
}
