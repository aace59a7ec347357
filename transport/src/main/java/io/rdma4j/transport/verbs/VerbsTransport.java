package io.rdma4j.transport.verbs;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.IdleStrategy;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.internal.RegistrationCache;
import io.rdma4j.transport.internal.RequestCompletion;
import io.rdma4j.transport.internal.TransportState;
import io.rdma4j.verbs.Access;
import io.rdma4j.verbs.MemoryRegion;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;

/**
 * The verbs provider: RC queue pairs on one RDMA device (RDMA4J_IB_HCA / _PORT / _GID_INDEX),
 * {@code RDMA4J_IB_QPS_PER_CONNECTION} of them per peer, with large messages striped over them in
 * 128-byte aligned parts. The protocol (small isends eagerly into the peer's ring, larger ones
 * after a receiver-driven clear-to-send, write-with-immediate completion, credits so RNR never
 * happens) is described in {@link VerbsConnection}; where a small message's time goes, in
 * docs/verbs-path.md.
 *
 * <p><b>Connection set-up</b> ({@link ConnectionBroker}): each side creates its QPs, posts its
 * receives, publishes a {@link ConnectionDescriptor} (QPNs, PSNs, GID/LID, MTU, control region and
 * mailbox rkeys) through the store, reads the peer's, moves its QPs to RTS and then waits for the
 * peer's "ready", so no packet reaches a QP that is not yet ready. While waiting it answers the
 * other ranks that asked for it, so ranks may request their connections in any order.
 *
 * <p><b>Progress and threads</b>: {@link #test}, {@link #await}, {@link Connection#flush()} and
 * {@link Connection#pollImmediate()} poll every connection's completion queue on the caller's
 * thread, as the TCP provider does; with RDMA4J_PROGRESS_THREAD a busy-polling thread per
 * transport (device) does the same between the caller's calls, idling with the configured
 * {@link IdleStrategy}, optionally pinned to RDMA4J_PROGRESS_CPU.
 *
 * <p><b>Doorbell batching and the ordering rule</b>: work requests of a connection are collected
 * per QP and posted as one chain (one doorbell) at {@link Connection#flush()}, {@link #test},
 * {@link #await}, {@link Connection#pollImmediate()}, or when a batch reaches RDMA4J_BATCH_SIZE.
 * So a request may sit in a batch, unseen by the NIC, until one of those calls: anything whose
 * correctness depends on the peer having seen an earlier request (a flag in memory written after
 * data, a store message telling the peer to look, a wait on something the peer does only after
 * our request arrived) must come after a {@link Connection#flush()}. Only every
 * RDMA4J_SIGNAL_INTERVAL-th work request is signalled, plus the last one of a batch holding the
 * end of a request someone waits for.
 *
 * <p><b>Memory</b>: {@link #allocate} hands out blocks of a registered {@link BufferPool}
 * (optionally on 2 MiB huge pages); {@link #register} caches registrations of caller memory by
 * (address, size, arena), and memory inside a pool region reuses the pool's registration. So a
 * steady-state step registers nothing, and no operation allocates. Registrations of freed memory
 * are released at the next new registration and by a sweep every {@link #SWEEP_INTERVAL}
 * register calls; with RDMA4J_REGISTRATION_CAP_BYTES, the least recently used ones that no
 * pending request uses are released to stay under the cap (a caller that keeps a registration
 * must register the memory again before each use, which costs a lookup when it is still there).
 *
 * <p><b>Faults</b>: a peer whose process exits (or closes its transport) is known within
 * milliseconds through the TCP {@link Liveness} socket beside its connection; a peer that cannot
 * answer at all (its host or link gone) through a work request that fails, its retries exhausted
 * after about RDMA4J_IB_TIMEOUT x (RDMA4J_IB_RETRY_CNT + 1), a zero-length probe keeping an idle
 * connection under watch. Either fails every pending request to that peer with a
 * {@link TransportException} naming it. Closing never lets the NIC touch freed memory: QPs go to
 * ERROR and are drained and destroyed before any region is deregistered or freed.
 *
 * <p>All state is guarded by this object's monitor.
 */
public final class VerbsTransport implements Transport {
    private static final System.Logger LOG = System.getLogger(VerbsTransport.class.getName());
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG;
    /** Register calls between two sweeps for registrations of freed memory (a power of two). */
    static final long SWEEP_INTERVAL = 1024;
    /**
     * The latest register calls whose registrations the cap never releases: a collective
     * registers its send memory, then its receive memory, before it posts anything on either
     * (sparing more would keep idle memory of earlier calls pinned).
     */
    static final int RECENT_REGISTRATIONS = 2;

    final TransportConfig config;
    private final int rank;
    private final int size;
    final VerbsDevice device;
    final RequestTable requests;
    private final BufferPool pool;
    /** [0, 8 x capacity): sizes peers write for this side's receives; then the staged sizes of its sends. */
    private final Arena mailboxArena;
    private final MemorySegment mailboxes;
    private final MemoryRegion mailboxMr;
    private final long outboxOffset;
    private final VerbsConnection[] connections;
    private final VerbsConnection[] live;
    private int liveCount;
    /** See {@link VerbsConnection#ackGraceNanos}. */
    final long ackGraceNanos;
    private final RegistrationCache<VerbsBuffer> cache = new RegistrationCache<>();
    private final List<MemoryRegion> ownRegions = new ArrayList<>();
    /** Bytes of caller memory this transport has registered (and so pinned) at the moment. */
    private long pinnedBytes;
    /** Counts register calls: the recency of each registration, and when to sweep for freed memory. */
    private long registrationClock;
    /** The rank whose loss first broke a connection of this transport (-1: none); see {@link #fail}. */
    private int firstLost = -1;
    private long evictions;
    private final Predicate<VerbsBuffer> releaseIfFreed = this::releaseIfFreed;
    /** Registrations replaced in the cache while a pending request used them (guarded by this). */
    private final List<VerbsBuffer> retired = new ArrayList<>();
    private final Predicate<VerbsBuffer> releaseIfIdle = this::releaseIfIdle;
    private final Set<VerbsBuffer> allocated = new LinkedHashSet<>();
    private final Object connectLock = new Object();
    private final ConnectionBroker broker;
    private final RequestCompletion completion;
    private final ProgressThread progressThread;
    private final TransportState state;
    final Liveness liveness;

    public VerbsTransport(TransportConfig config, Store store, int rank, int size) {
        this.state = new TransportState("verbs", rank, size);
        this.config = config;
        this.rank = rank;
        this.size = size;
        this.connections = new VerbsConnection[size];
        this.broker = new ConnectionBroker(this, store, rank, size);
        this.live = new VerbsConnection[size];
        this.ackGraceNanos = VerbsConnection.ackGraceNanos(config.ibTimeout());
        this.requests = new RequestTable(config.maxOutstandingRequests());
        this.completion = new RequestCompletion(requests, this::progressOnce, this, rank, config::newIdleStrategy);
        config.logOnce();
        this.device = VerbsDevice.open(config);
        this.mailboxArena = Arena.ofShared();
        MemoryRegion registered = null;
        BufferPool created = null;
        Liveness listening = null;
        try {
            this.outboxOffset = 8L * requests.capacity;
            this.mailboxes = mailboxArena.allocate(2 * outboxOffset, 64);
            this.mailboxMr = registered = device.pd.register(mailboxes, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            this.pool = created = new BufferPool(device.pd, config.hugePages(), "verbs transport of rank " + rank);
            this.liveness = listening = Liveness.listen(device.livenessAddress(config), size);
            if (config.progressThread()) {
                progressThread = new ProgressThread("rdma4j-verbs-progress-rank-" + rank, this::progressOnce,
                        e -> abort(new TransportException(-1, "the verbs progress thread of rank " + rank + " failed: " + e, e)),
                        config.newIdleStrategy(), config.progressCpu());
                progressThread.start(); // last: nothing after it can fail and leave the thread running
            } else {
                progressThread = null;
            }
        } catch (RuntimeException | Error e) { // Error: a thread the system could not create, say
            // children first: a device whose objects are still open is not released
            Teardown alsoFailed = new Teardown();
            alsoFailed.close(listening, created, registered, mailboxArena::close, device);
            alsoFailed.addSuppressedTo(e);
            if (e instanceof Error || e instanceof TransportException) {
                throw e;
            }
            throw new TransportException(-1, "rank " + rank + ": verbs transport set-up on " + device.describe()
                    + " failed: " + e.getMessage(), e);
        }
        LOG.log(Level.DEBUG, "rank {0} of {1}: verbs transport on {2}", rank, size, device.describe());
    }

    /** Whether this process can use a verbs device as {@code config} asks (for the automatic choice). */
    public static boolean usable(TransportConfig config) {
        return VerbsDevice.usable(config);
    }

    @Override
    public String provider() {
        return "verbs";
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    /** The device, port and address in use, e.g. "rxe0 port 1 (Ethernet, MTU 1024, GID 1 ::ffff:198.18.0.1 ROCE_V2)". */
    public String deviceDescription() {
        return device.describe();
    }

    // ---- Memory.

    @Override
    public synchronized RegisteredBuffer allocate(long bytes) {
        state.checkOpen();
        if (bytes < 0) {
            throw new IllegalArgumentException("cannot allocate " + bytes + " bytes");
        }
        BufferPool.Block block;
        try {
            block = pool.allocate(bytes);
        } catch (RuntimeException e) {
            throw new TransportException(-1, "rank " + rank + " could not allocate " + bytes
                    + " bytes of registered memory on " + device.describe() + ": " + e.getMessage(), e);
        }
        VerbsBuffer b = new VerbsBuffer(this, block.memory.asSlice(0, bytes), block.region.mr.lkey(),
                block.region.mr.rkey(), block, null);
        allocated.add(b);
        return b;
    }

    @Override
    public synchronized RegisteredBuffer register(MemorySegment segment) {
        state.checkOpen();
        if (!segment.isNative()) {
            throw new IllegalArgumentException("only native (off-heap) memory can be registered, not " + segment);
        }
        long address = segment.address();
        long bytes = segment.byteSize();
        long now = ++registrationClock;
        if ((now & (SWEEP_INTERVAL - 1)) == 0) {
            sweepRegistrations();
        }
        VerbsBuffer cached = cache.get(segment);
        if (cached != null) {
            if (cached.segment().scope() == segment.scope() && segment.scope().isAlive() && !cached.closed) {
                cached.lastUse = now;
                return cached;
            }
            // The memory it pinned was freed and this address reused: that registration is stale
            // (the new one below replaces its cache entry). A pending request may still use it
            // (e.g. MemorySegment.ofBuffer gives every view of one buffer a scope of its own):
            // then it is deregistered once that request is over.
            if (inFlight(cached)) {
                retired.add(cached);
            } else {
                closeRegistration(cached);
            }
        }
        VerbsBuffer b;
        BufferPool.Region region = bytes == 0 ? null : pool.regionContaining(address, bytes);
        if (bytes == 0) {
            b = new VerbsBuffer(this, segment, 0, 0, null, null);
        } else if (region != null) {
            b = new VerbsBuffer(this, segment, region.mr.lkey(), region.mr.rkey(), null, null);
        } else {
            sweepRegistrations();
            makeRoomFor(address, bytes);
            MemoryRegion mr;
            try {
                // a read-only view for reading only: the device must not write what Java may not
                mr = device.pd.register(segment, segment.isReadOnly() ? Access.REMOTE_READ
                        : Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            } catch (RuntimeException e) {
                throw new TransportException(-1, "rank " + rank + " could not register " + bytes + " bytes at 0x"
                        + Long.toHexString(address) + " with " + device.describe() + ": " + e.getMessage(), e);
            }
            ownRegions.add(mr);
            pinnedBytes += bytes;
            b = new VerbsBuffer(this, segment, mr.lkey(), mr.rkey(), null, mr);
        }
        b.lastUse = now;
        cache.put(segment, b);
        return b;
    }

    /**
     * The cache's sweep ({@code removeIf}): deregisters {@code b} and says so when its memory was
     * freed (its segment's scope is no longer alive) and no pending request uses it, so that
     * freed memory does not stay pinned. It runs before each new registration (the only time the
     * cache grows) and every {@link #SWEEP_INTERVAL} register calls (memory freed by a job that
     * registers nothing new).
     */
    private boolean releaseIfFreed(VerbsBuffer b) {
        if (b.segment().scope().isAlive() || inFlight(b)) {
            return false;
        }
        closeRegistration(b);
        return true;
    }

    /** Deregisters the cached registrations of freed memory and the retired ones no pending request uses. */
    private void sweepRegistrations() {
        cache.removeIf(releaseIfFreed);
        retired.removeIf(releaseIfIdle);
    }

    /** The sweep of {@link #retired}: deregisters {@code b} once no pending request uses it. */
    private boolean releaseIfIdle(VerbsBuffer b) {
        if (inFlight(b)) {
            return false;
        }
        closeRegistration(b);
        return true;
    }

    /**
     * Keeps the pinned bytes within {@link TransportConfig#registrationCapBytes()} for a new
     * registration of {@code bytes}: deregisters the least recently handed out registrations of
     * live memory that no pending request uses, sparing the last {@link #RECENT_REGISTRATIONS}
     * (a collective registers its send and receive memory just before it posts them) and those
     * whose remote descriptor was handed out (a peer's one-sided write or read against a
     * deregistered region would fail its connection, the error pointing at the peer).
     *
     * @throws TransportException when the registrations that may not go leave no room
     */
    private void makeRoomFor(long address, long bytes) {
        long cap = config.registrationCapBytes();
        if (bytes > cap) {
            throw new TransportException(-1, "rank " + rank + " cannot register " + bytes + " bytes at 0x"
                    + Long.toHexString(address) + ": more than the registration cap of " + cap + " bytes ("
                    + TransportConfig.ENV_REGISTRATION_CAP_BYTES + ")");
        }
        List<VerbsBuffer> busy = null;
        while (pinnedBytes + bytes > cap) {
            VerbsBuffer victim = leastRecentlyUsed(busy);
            if (victim == null) {
                throw new TransportException(-1, "rank " + rank + " cannot register " + bytes + " bytes at 0x"
                        + Long.toHexString(address) + ": " + pinnedBytes + " bytes are registered by pending requests "
                        + "or the latest calls, and the registration cap is " + cap + " bytes ("
                        + TransportConfig.ENV_REGISTRATION_CAP_BYTES + ")");
            }
            if (inFlight(victim)) {
                if (busy == null) {
                    busy = new ArrayList<>();
                }
                busy.add(victim);
                continue;
            }
            forget(victim);
            evictions++;
        }
    }

    /** The least recently handed out registration of its own (pinned) region that may go, or null. */
    private VerbsBuffer leastRecentlyUsed(List<VerbsBuffer> excluded) {
        long spareFrom = registrationClock - RECENT_REGISTRATIONS;
        VerbsBuffer[] oldest = new VerbsBuffer[1];
        cache.forEach(b -> {
            if (b.ownRegion != null && !b.closed && !b.handedOut() && b.lastUse <= spareFrom
                    && (oldest[0] == null || b.lastUse < oldest[0].lastUse)
                    && (excluded == null || !excluded.contains(b))) {
                oldest[0] = b;
            }
        });
        return oldest[0];
    }

    /** Whether a pending request uses {@code b}: the NIC or the peer may still touch its memory. */
    private boolean inFlight(VerbsBuffer b) {
        for (int s = 0; s < requests.capacity; s++) {
            if (requests.buffer[s] == b && requests.pending(s)) {
                return true;
            }
        }
        return false;
    }

    private void closeRegistration(VerbsBuffer b) {
        if (b.closed) { // a stale entry whose replacement failed to register stays cached, closed
            return;
        }
        b.closed = true;
        if (b.ownRegion != null) {
            try {
                b.ownRegion.close();
            } finally { // the region is done with either way: the accounts must not keep it
                ownRegions.remove(b.ownRegion);
                pinnedBytes -= b.segment().byteSize();
            }
        }
    }

    /**
     * Releases a registration of caller memory now (its {@link RegisteredBuffer#close()}): later
     * uses of it fail, and registering the memory again makes a new one.
     *
     * @throws IllegalStateException if a pending request still uses it
     */
    synchronized void deregister(VerbsBuffer b) {
        if (b.closed || state.closed()) {
            return;
        }
        if (inFlight(b)) {
            throw new IllegalStateException("cannot release " + b + ": a pending request uses it (close it after the "
                    + "request completed)");
        }
        forget(b);
    }

    /** Drops {@code b} from the cache and deregisters it. */
    private void forget(VerbsBuffer b) {
        cache.removeIf(cached -> cached == b);
        closeRegistration(b);
    }

    /** Bytes of caller memory registered (pinned) by this transport now; pool memory not included. */
    synchronized long pinnedBytes() {
        return pinnedBytes;
    }

    /** Registrations released to stay within the registration cap so far. */
    synchronized long registrationEvictions() {
        return evictions;
    }

    /**
     * Returns an allocated buffer to the pool. Requests still using its memory (through it or a
     * registered view of it) fail; if the NIC or the peer may still touch it (a posted operation,
     * a receive whose CTS went out), the connection is failed and drained first, so the block is
     * never reused under a transfer. Views of it are closed with it. A descriptor handed out for
     * it ({@code remote()}) stays valid for the pool's region, which stays registered: peers must
     * be done with it before the owner frees it, as with any registered pool.
     */
    synchronized void release(VerbsBuffer b) {
        if (b.closed || state.closed()) {
            return;
        }
        for (int s = 0; s < requests.capacity; s++) {
            if (requests.pending(s) && requests.buffer[s] != null && requests.buffer[s].overlaps(b)) {
                int peer = requests.peer[s];
                VerbsConnection c = connections[peer];
                if (requests.exposed[s] && c != null) {
                    release(c, new TransportException(peer, "a buffer in transfer to or from peer " + peer + " was closed"));
                } else if (c != null && requests.twoSided(s)) {
                    release(c, requests.closedUnderPending(s));
                } else {
                    requests.fail(s, new TransportException(peer, requests.describe(s) + " failed: its buffer was closed"));
                }
            }
        }
        b.closed = true;
        allocated.remove(b);
        List<VerbsBuffer> views = viewsOf(b);
        if (!views.isEmpty()) {
            for (VerbsBuffer view : views) {
                view.closed = true;
            }
            cache.removeIf(views::contains);
        }
        pool.free(b.block);
    }

    /** The cached registrations of memory inside pool block {@code b}'s (they borrow its region's keys). */
    private List<VerbsBuffer> viewsOf(VerbsBuffer b) {
        List<VerbsBuffer> views = new ArrayList<>(0);
        cache.forEach(v -> {
            if (v.block == null && v.ownRegion == null && v.overlaps(b)) {
                views.add(v);
            }
        });
        return views;
    }

    long mailboxAddress() {
        return mailboxes.address();
    }

    int mailboxRkey() {
        return mailboxMr.rkey();
    }

    int mailboxLkey() {
        return mailboxMr.lkey();
    }

    /** Presets receive slot {@code s}'s mailbox word, before its CTS goes out. */
    void setMailboxValue(int s, long value) {
        mailboxes.set(LONG, 8L * s, value);
    }

    /** The size a peer's isend reported for receive slot {@code s}. */
    long mailboxValue(int s) {
        return CtsEntry.acquire(mailboxes, 8L * s);
    }

    long outboxAddress(int s) {
        return mailboxes.address() + outboxOffset + 8L * s;
    }

    void setOutboxValue(int s, long value) {
        mailboxes.set(LONG, outboxOffset + 8L * s, value);
    }

    // ---- Connections.

    /**
     * Blocks until the peer has asked for its connection to this rank too, answering other
     * ranks' requests meanwhile ({@link ConnectionBroker}), so ranks may connect in any order.
     */
    @Override
    public Connection connection(int peer) {
        synchronized (this) {
            state.checkPeer(peer, size);
            if (connections[peer] != null) {
                return connections[peer];
            }
        }
        synchronized (connectLock) {
            VerbsConnection c = broker.connect(peer, config.timeoutNanos());
            LOG.log(Level.DEBUG, "rank {0} connected to peer {1} over {2} QPs on {3}", rank, peer, c.qps, device.describe());
            return c;
        }
    }

    /** For the broker: this side's QPs and control region for {@code peer}. */
    synchronized VerbsConnection newConnection(int peer) {
        state.checkOpen();
        try {
            return new VerbsConnection(this, peer);
        } catch (RuntimeException e) {
            throw new TransportException(peer, "rank " + rank + " could not create the queue pairs for peer " + peer
                    + " on " + device.describe() + ": " + e.getMessage(), e);
        }
    }

    /** For the broker: RTR and RTS towards the peer's endpoint; {@code watch} (may be null) is closed if that fails. */
    synchronized void connect(VerbsConnection c, ConnectionDescriptor remote, Liveness.Watch watch) {
        try {
            state.checkOpen();
            c.connect(remote, watch);
        } catch (RuntimeException e) {
            if (watch != null) {
                watch.close();
            }
            throw e;
        }
    }

    /** For the broker: both sides are ready; the connection joins progress. */
    synchronized void promote(VerbsConnection c) {
        state.checkOpen();
        connections[c.peer] = c;
        live[liveCount++] = c;
    }

    /** For the broker: a half-built connection is given up. */
    synchronized void discard(VerbsConnection c, Throwable cause) {
        c.release(cause instanceof TransportException te ? te
                : new TransportException(c.peer, "connection set-up failed: " + cause, cause));
    }

    /** Throws if the transport was aborted or closed (the broker checks between store polls). */
    synchronized void checkUsable() {
        state.checkOpen();
    }

    // ---- Operations (called by VerbsConnection).

    synchronized long isend(VerbsConnection c, RegisteredBuffer source, long offset, long length, int tag) {
        live(c);
        VerbsBuffer b = local(source, offset, length, "isend source");
        int s = requests.allocate(RequestTable.SEND, c.peer, b, offset, length);
        requests.tag[s] = tag;
        long id = requests.id(s);
        try {
            c.startSend(s);
        } catch (RuntimeException e) {
            fail(c, e);
        }
        return id;
    }

    synchronized long irecv(VerbsConnection c, RegisteredBuffer target, long offset, long capacity, int tag) {
        live(c);
        VerbsBuffer b = local(target, offset, capacity, "irecv target");
        TransportState.checkWritable(b.segment(), "irecv target");
        int s = requests.allocate(RequestTable.RECV, c.peer, b, offset, capacity);
        requests.tag[s] = tag;
        long id = requests.id(s);
        try {
            c.startReceive(s);
        } catch (RuntimeException e) {
            fail(c, e);
        }
        return id;
    }

    synchronized long write(VerbsConnection c, RegisteredBuffer source, long sourceOffset, RemoteBuffer target,
                            long targetOffset, long length, long immediate) {
        live(c);
        VerbsBuffer b = local(source, sourceOffset, length, "write source");
        remote(c, target, targetOffset, length, "write target");
        TransportState.checkImmediate(immediate, Connection.NO_IMMEDIATE);
        int s = requests.allocate(RequestTable.WRITE, c.peer, b, sourceOffset, length);
        requests.remoteAddress[s] = target.address() + targetOffset;
        requests.remoteKey[s] = (int) target.key();
        requests.immediate[s] = immediate;
        return startOneSided(c, s);
    }

    synchronized long read(VerbsConnection c, RegisteredBuffer target, long targetOffset, RemoteBuffer source,
                           long sourceOffset, long length) {
        live(c);
        VerbsBuffer b = local(target, targetOffset, length, "read target");
        TransportState.checkWritable(b.segment(), "read target");
        remote(c, source, sourceOffset, length, "read source");
        int s = requests.allocate(RequestTable.READ, c.peer, b, targetOffset, length);
        requests.remoteAddress[s] = source.address() + sourceOffset;
        requests.remoteKey[s] = (int) source.key();
        return startOneSided(c, s);
    }

    private long startOneSided(VerbsConnection c, int s) {
        long id = requests.id(s);
        try {
            c.startOneSided(s);
        } catch (RuntimeException e) {
            fail(c, e);
        }
        return id;
    }

    synchronized long pollImmediate(VerbsConnection c) {
        state.checkOpen();
        if (!c.hasImmediate()) {
            progressAll();
        }
        long v = c.pollImmediateValue();
        if (v == Connection.NO_IMMEDIATE && c.failure != null) {
            throw new TransportException(c.peer, "connection to peer " + c.peer + " failed: " + c.failure.getMessage(), c.failure);
        }
        return v;
    }

    synchronized void flush(VerbsConnection c) {
        live(c);
        try {
            c.flushPass();
        } catch (RuntimeException e) {
            fail(c, e);
        }
    }

    private void live(VerbsConnection c) {
        state.checkConnection(c.peer, c.failure);
    }

    private VerbsBuffer local(RegisteredBuffer b, long offset, long length, String what) {
        if (!(b instanceof VerbsBuffer vb) || vb.owner != this) {
            throw new IllegalArgumentException(what + " buffer was not registered with this verbs transport: " + b);
        }
        if (vb.closed) {
            throw new IllegalStateException(what + " buffer is closed: " + b);
        }
        TransportState.checkAlive(vb.segment(), what, b);
        TransportState.checkRange(offset, length, vb.segment().byteSize(), what);
        return vb;
    }

    private static void remote(VerbsConnection c, RemoteBuffer r, long offset, long length, String what) {
        TransportState.checkRemote(c.peer, r, offset, length, what);
        if (r.key() < 0 || r.key() > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException(what + " has key " + r.key() + ", not a verbs rkey (a descriptor of another provider?)");
        }
    }

    // ---- Completion.

    @Override
    public long test(long request) {
        return completion.test(request);
    }

    @Override
    public long await(long request, long timeoutNanos) {
        return completion.await(request, timeoutNanos);
    }

    /** One progress pass over every connection; returns the work done (0 if idle). */
    private int progressAll() {
        int work = 0;
        for (int i = 0; i < liveCount; i++) {
            VerbsConnection c = live[i];
            if (c.failure == null) {
                try {
                    work += c.progress();
                } catch (RuntimeException e) {
                    fail(c, e);
                }
            }
        }
        return work;
    }

    /** A pass of the progress thread or of a test: nothing once closed. */
    private synchronized int progressOnce() {
        return state.closed() ? 0 : progressAll();
    }

    /**
     * The connection broke while in use (a failed post or completion, the peer's liveness socket
     * closed): fails it as {@link #release} does, blaming the rank the cause blames. The first
     * rank lost is what this transport names to its peers when it closes ({@link Liveness}).
     */
    private void fail(VerbsConnection c, Throwable cause) {
        if (c.released()) {
            return;
        }
        TransportException local = state.localMemoryFault(c.peer, cause);
        TransportException e = cause instanceof TransportException te && te.peer() >= 0 ? te
                : local != null ? local
                : new TransportException(c.peer, "connection to peer " + c.peer + " failed: " + cause, cause);
        // a fault of this side's memory is not the peer's: the first rank lost stays unknown
        if (firstLost < 0 && !c.peerLeftCleanly() && local == null) {
            firstLost = e.peer();
        }
        release(c, e);
    }

    /** Fails the connection and every pending request to its peer, then drains and releases its QPs. */
    private void release(VerbsConnection c, TransportException e) {
        if (c.released()) {
            return;
        }
        LOG.log(Level.DEBUG, "rank " + rank + ": " + e.getMessage());
        requests.failPending(c.peer, e);
        c.release(e);
    }

    @Override
    public synchronized void abort(Throwable cause) {
        TransportException aborted = state.abort(cause);
        if (aborted != null) {
            failAll(aborted);
        }
    }

    private void failAll(TransportException cause) {
        for (VerbsConnection c : connections) {
            if (c != null) {
                release(c, state.stopped(c.peer, cause));
            }
        }
        requests.failPending(-1, cause);
    }

    /**
     * Fails what is pending, drains and destroys every QP, and only then deregisters and frees
     * the memory (pool, registrations, mailboxes) and closes the device.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (state.closed()) {
                return;
            }
            state.markClosed();
        }
        if (progressThread != null) {
            progressThread.stop(5_000);
        }
        // whatever fails from here on, the device and the memory are released (a second close
        // returns at once, so nothing else would)
        boolean clean = false;
        try {
            PathTrace.dump(rank);
            synchronized (connectLock) { // a connecting thread sees the close and leaves the broker
                broker.abandonAll(new TransportException(-1, "transport closed"));
            }
            synchronized (this) {
                clean = firstLost < 0 && !state.aborted();
            }
            if (clean) {
                awaitAcknowledgements();
            }
        } finally {
            finishClose(clean);
        }
    }

    /** The end of {@link #close}: tells the peers, then releases the connections and memory and closes the device. */
    private void finishClose(boolean clean) {
        int said;
        synchronized (this) {
            said = firstLost >= 0 ? firstLost : clean ? Liveness.CLOSED_CLEANLY : Liveness.NOTHING_SAID;
        }
        liveness.close(said); // peers learn now that this side is gone, and how: cleanly, or which rank it lost first
        synchronized (this) {
            failAll(new TransportException(-1, "transport closed"));
            for (VerbsBuffer b : allocated) {
                b.closed = true;
            }
            allocated.clear();
            cache.clear();
            Teardown teardown = new Teardown();
            teardown.close(pool::close);
            teardown.close(ownRegions.toArray(AutoCloseable[]::new));
            ownRegions.clear();
            pinnedBytes = 0;
            teardown.close(mailboxMr::close, mailboxArena::close, device::close);
            teardown.report(LOG, "verbs transport of rank " + rank);
        }
    }

    /**
     * A clean close first lets every peer acknowledge what this side posted (CTS entries, credit
     * reports, the last writes of its last collective), so that no peer waits for something this
     * side's teardown would flush unsent; bounded by {@link VerbsConnection#ackGraceNanos}, which
     * a peer that is alive, even one that is not progressing, never needs: its NIC acknowledges.
     */
    private void awaitAcknowledgements() {
        long deadline = System.nanoTime() + ackGraceNanos;
        boolean interrupted = false;
        try {
            fenceEveryPeer();
            while (!acknowledgedByEveryPeer() && System.nanoTime() - deadline < 0) {
                interrupted |= Thread.interrupted(); // or park would return at once, and this loop spin
                LockSupport.parkNanos(50_000);
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void fenceEveryPeer() {
        everyLiveConnection(c -> {
            c.fenceForClose();
            return true;
        });
    }

    /** One pass over the connections of a closing transport: whether each peer acknowledged everything posted to it. */
    private boolean acknowledgedByEveryPeer() {
        return everyLiveConnection(VerbsConnection::acknowledged);
    }

    /** Runs {@code step} on every live connection (failing one whose step throws); whether each step said true. */
    private synchronized boolean everyLiveConnection(Predicate<VerbsConnection> step) {
        boolean all = true;
        for (int i = 0; i < liveCount; i++) {
            VerbsConnection c = live[i];
            try {
                all &= step.test(c);
            } catch (RuntimeException e) {
                fail(c, e);
            }
        }
        return all;
    }

    // ---- For tests and diagnostics.

    /** The connection to {@code peer} if it is established, else null. */
    synchronized VerbsConnection established(int peer) {
        return connections[peer];
    }

    BufferPool pool() {
        return pool;
    }

    boolean progressThreadRunning() {
        return progressThread != null && progressThread.isAlive();
    }

    String progressThreadPinFailure() {
        return progressThread == null ? "no progress thread" : progressThread.pinFailure();
    }

    @Override
    public String toString() {
        return "VerbsTransport[rank " + rank + "/" + size + " on " + device.describe() + "]";
    }
}
