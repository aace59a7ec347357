package io.rdma4j.transport.tcp;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.IdleStrategy;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.TransportTimeoutException;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.internal.Closing;
import io.rdma4j.transport.internal.HostAddress;
import io.rdma4j.transport.internal.PeerEntry;
import io.rdma4j.transport.internal.RegistrationCache;
import io.rdma4j.transport.internal.RequestCompletion;
import io.rdma4j.transport.internal.TransportState;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.Consumer;

/**
 * The TCP provider: one NIO socket per peer pair (the lower rank connects, the higher accepts;
 * addresses and a per-listener secret are exchanged through the store). There is no progress
 * thread: {@link #test}, {@link #await}, {@link Connection#flush()} and
 * {@link Connection#pollImmediate()} drive the sockets of every connection on the caller's
 * thread, so a rank that waits for anything also serves its peers' reads and clear-to-sends.
 * (A one-sided read of a rank that is not calling into its transport therefore waits until it
 * does; collectives always do.)
 *
 * <p>Two-sided messages are receiver-driven: {@code irecv} queues a CTS frame (tag, capacity,
 * receive id); the sender's k-th send of a tag takes the k-th CTS of that tag and writes one DATA
 * frame addressed to that receive. One-sided writes carry (region key, offset, length, immediate)
 * and are placed by the receiver's progress loop after its region table validated them; reads
 * are a request frame answered by a response frame. A frame that violates bounds or the protocol
 * fails the connection and is never applied. Sends and writes complete when their data left the
 * source buffer (copied or handed to the kernel), as with NCCL's socket transport.
 *
 * <p>All state is guarded by this object's monitor; request ids, slots and buffers are reused, so
 * steady-state operations allocate nothing.
 */
public final class TcpTransport implements Transport {
    private static final System.Logger LOG = System.getLogger(TcpTransport.class.getName());
    static final String ENDPOINT_KEY = "rdma4j/tcp/endpoint/";
    /** How long telling the peers who was lost may take in all ({@link #tellWhoWasLost}). */
    private static final long FAULT_WRITE_NANOS = 100_000_000;

    private final TransportConfig config;
    private final Store store;
    private final int rank;
    private final int size;
    /** The rank whose loss first broke a connection of this transport (-1: none yet); see {@link #lost}. */
    private int firstLost = -1;
    final RequestTable requests;
    final RegionTable regions = new RegionTable();
    private final ServerSocketChannel listener;
    private final TcpEndpoint endpoint;
    private final Selector selector;
    private final TcpConnection[] connections;
    /** Per peer, the channel a thread is connecting outside the lock, or null (guarded by this). */
    private final SocketChannel[] connecting;
    private final List<Handshake> handshakes = new ArrayList<>();
    private final List<TcpBuffer> allocated = new ArrayList<>();
    private final RegistrationCache<TcpBuffer> cache = new RegistrationCache<>(RegistrationCache.BOUNDED_ENTRIES);
    private final Consumer<SelectionKey> onSelected = this::onSelected;
    private final RequestCompletion completion;
    private int selectedWork;
    /**
     * The transport's one connection while it has exactly one (guarded by this), read without
     * the selector: a read that finds nothing costs the syscall a select that finds nothing does,
     * and one that finds bytes saves the select before it. Every message of a two-rank world
     * saves that syscall (about 1 us on this project's build hosts): 2-rank allreduce over TCP,
     * 8 B-8 KiB, {@code allreduce-perf --ranks 2 -t tcp -b 8 -e 8K -f 4 -n 100 -w 20 -R 3 -p
     * out}, with and without taking turns, faster at every size in five of seven pairs (8 B: 11.1
     * against 13.2 us, 8.1-8.5 against 10.1), slower in one (13.7 against 13.2), one pair with the
     * host's level changing in between. Re-measure the same way.
     */
    private TcpConnection soleConnection;
    private int registered;
    private final TransportState state;

    public TcpTransport(TransportConfig config, Store store, int rank, int size) {
        this.state = new TransportState("TCP", rank, size);
        this.config = config;
        this.store = store;
        this.rank = rank;
        this.size = size;
        this.requests = new RequestTable(config.maxOutstandingRequests());
        this.connections = new TcpConnection[size];
        this.connecting = new SocketChannel[size];
        this.completion = new RequestCompletion(requests, new RequestCompletion.Progress() {
            @Override
            public int progress() {
                return TcpTransport.this.progress();
            }

            @Override
            public String waitingFor(int slot) {
                TcpConnection c = connections[requests.peer[slot]];
                return c != null && c.unpolledImmediates() >= TcpConnection.MAX_UNPOLLED_IMMEDIATES
                        ? " (the stream from peer " + c.peer + " waits: " + c.unpolledImmediates()
                                + " immediates of its writes were not taken with pollImmediate)"
                        : "";
            }
        }, this, rank, config::newIdleStrategy);
        config.logOnce();
        InetAddress address = HostAddress.listenAddress(config);
        byte[] secret = new byte[16];
        new SecureRandom().nextBytes(secret);
        try {
            this.selector = Selector.open();
            this.listener = ServerSocketChannel.open();
            listener.bind(new InetSocketAddress(address, 0), Math.max(64, size));
            listener.configureBlocking(false);
        } catch (IOException e) {
            closeQuietly();
            throw new TransportException(-1, "rank " + rank + " cannot listen on " + address + ": " + e, e);
        }
        this.endpoint = new TcpEndpoint(address.getHostAddress(), listener.socket().getLocalPort(), secret);
        try {
            store.set(ENDPOINT_KEY + rank, endpoint.toBytes());
        } catch (RuntimeException e) {
            closeQuietly();
            throw e;
        }
        LOG.log(Level.DEBUG, "rank {0} of {1}: TCP transport listening on {2}:{3}", rank, size, endpoint.host(), endpoint.port());
    }

    @Override
    public String provider() {
        return "tcp";
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    // ---- Memory.

    @Override
    public synchronized RegisteredBuffer allocate(long bytes) {
        state.checkOpen();
        if (bytes < 0) {
            throw new IllegalArgumentException("cannot allocate " + bytes + " bytes");
        }
        Arena arena = Arena.ofShared();
        TcpBuffer b;
        try {
            b = new TcpBuffer(this, arena.allocate(bytes, 4096), arena, true, false);
        } catch (RuntimeException | OutOfMemoryError e) {
            arena.close();
            throw e;
        }
        b.publish(rank, regions.add(b));
        allocated.add(b);
        return b;
    }

    @Override
    public synchronized RegisteredBuffer register(MemorySegment segment) {
        state.checkOpen();
        if (!segment.isNative()) {
            throw new IllegalArgumentException("only native (off-heap) memory can be registered, not " + segment);
        }
        TcpBuffer b = cache.get(segment);
        // Same range but another scope: that memory was freed and the address reused.
        if (b == null || b.segment().scope() != segment.scope()) {
            b = new TcpBuffer(this, segment, null, false, true);
            cache.put(segment, b);
        }
        return b;
    }

    /**
     * Frees an allocated buffer, failing the requests that still use its memory (through it or
     * through a registered view of it). A read whose request went out is abandoned: its response
     * is read and dropped when it comes, instead of reading as a response to no read.
     */
    synchronized void release(TcpBuffer b) {
        if (b.closed) {
            return;
        }
        for (int s = 0; s < requests.capacity; s++) {
            if (requests.pending(s) && requests.buffer[s] != null && requests.buffer[s].overlaps(b)) {
                TcpConnection c = connections[requests.peer[s]];
                if (requests.kind[s] == RequestTable.READ && requests.state[s] == RequestTable.ACTIVE && c != null
                        && c.failure == null) {
                    c.abandonRead(requests.id(s), requests.length[s]); // its response has not started coming in
                }
                TransportException unpaired = requests.twoSided(s) ? requests.closedUnderPending(s) : null;
                requests.fail(s, new TransportException(requests.peer[s], requests.describe(s)
                        + " failed: its buffer was closed"));
                if (unpaired != null && c != null && c.failure == null) {
                    failFromHere(c, unpaired);
                }
            }
        }
        // A payload of this buffer may be half-way through a socket; that stream cannot continue
        // (a read's response coming in is dropped instead: abandonRead).
        for (TcpConnection c : connections) {
            if (c != null) {
                c.divertReadFrom(b);
            }
            if (c != null && c.failure == null && c.uses(b)) {
                failFromHere(c, new TransportException(c.peer, "a buffer in transfer to or from peer " + c.peer + " was closed"));
            }
        }
        regions.remove(b.key);
        allocated.remove(b);
        b.free();
    }

    // ---- Connections.

    /**
     * Waits for the peer without holding this transport's lock across the wait (only across each
     * poll), so that other threads' operations and {@link #abort} are not held up.
     */
    @Override
    public Connection connection(int peer) {
        synchronized (this) {
            state.checkPeer(peer, size);
            if (connections[peer] != null) {
                return connections[peer];
            }
        }
        return rank < peer ? connectTo(peer) : acceptFrom(peer);
    }

    /**
     * Connects to a higher rank. The blocking connect runs without this transport's lock, so that
     * a peer whose address drops SYNs holds up nobody else; one thread connects to a peer at a
     * time (two connections from one rank would leave the peer's accept with the wrong one), the
     * others wait for it. Abort and close close the channel, which ends the connect at once.
     */
    private TcpConnection connectTo(int peer) {
        TcpEndpoint remote = TcpEndpoint.fromBytes(peer, PeerEntry.await(store, ENDPOINT_KEY + peer, peer, config.timeout(),
                state::checkOpen, "its TCP endpoint"));
        String where = remote.host() + ":" + remote.port();
        SocketChannel ch;
        synchronized (this) {
            long deadline = System.nanoTime() + config.timeoutNanos();
            while (true) {
                state.checkOpen();
                if (connections[peer] != null) {
                    return connections[peer]; // another thread connected meanwhile
                }
                if (connecting[peer] == null) {
                    try {
                        ch = SocketChannel.open();
                    } catch (IOException e) {
                        throw new TransportException(peer, "rank " + rank + " could not open a socket to peer " + peer
                                + ": " + e, e);
                    }
                    connecting[peer] = ch;
                    break;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new TransportTimeoutException(peer, "rank " + rank + " waited " + config.timeout().toMillis()
                            + " ms for another thread's connection to peer " + peer + " at " + where);
                }
                try {
                    wait(Math.max(1, left / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new TransportException(peer, "interrupted while waiting for the connection to peer " + peer, e);
                }
            }
        }
        try {
            ch.socket().connect(new InetSocketAddress(remote.host(), remote.port()),
                    (int) Math.min(Integer.MAX_VALUE, config.timeout().toMillis()));
            ByteBuffer hello = ByteBuffer.allocate(Frame.HEADER).order(ByteOrder.LITTLE_ENDIAN);
            hello.putInt(Frame.HELLO).putInt(Frame.VERSION).putLong(Frame.MAGIC).putLong(rank)
                    .putLong(remote.secretHigh()).putLong(remote.secretLow()).flip();
            while (hello.hasRemaining()) {
                ch.write(hello);
            }
            synchronized (this) {
                state.checkOpen();
                TcpConnection c = register(peer, ch, where);
                connecting[peer] = null;
                return c;
            }
        } catch (IOException e) {
            synchronized (this) {
                state.checkOpen(); // an abort or close that ended the connect says so
            }
            throw new TransportException(peer, "rank " + rank + " could not connect to peer " + peer + " at " + where + ": " + e, e);
        } finally {
            synchronized (this) {
                if (connecting[peer] == ch) { // not registered
                    connecting[peer] = null;
                    Closing.quietly(ch);
                }
                notifyAll();
            }
        }
    }

    private TcpConnection register(int peer, SocketChannel ch, String where) throws IOException {
        ch.configureBlocking(false);
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        ch.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
        String notSet = CongestionControl.apply(ch, config.tcpCongestion());
        if (notSet != null) { // the connection works with the host's default
            LOG.log(config.tcpCongestion().equals(TransportConfig.TCP_CONGESTION_AUTO) ? Level.DEBUG : Level.WARNING,
                    "rank {0}: congestion control of the connection to peer {1} at {2} left at the host''s default: {3}",
                    rank, peer, where, notSet);
        }
        TcpConnection c = new TcpConnection(this, peer, ch, where);
        c.selectionKey = ch.register(selector, SelectionKey.OP_READ, c);
        connections[peer] = c;
        soleConnection = ++registered == 1 ? c : null;
        LOG.log(Level.DEBUG, "rank {0} connected to peer {1} at {2}", rank, peer, where);
        return c;
    }

    /** Accepts connections (from any lower rank) until {@code peer}'s arrived, serving others meanwhile. */
    private TcpConnection acceptFrom(int peer) {
        long deadline = System.nanoTime() + config.timeoutNanos();
        IdleStrategy idler = completion.idleStrategy();
        idler.reset();
        while (true) {
            int work;
            synchronized (this) {
                state.checkOpen();
                work = acceptPending() + progress();
                if (connections[peer] != null) {
                    return connections[peer];
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new TransportTimeoutException(peer, "peer " + peer + " did not connect to rank " + rank + " (listening on "
                            + endpoint.host() + ":" + endpoint.port() + ") within " + config.timeout().toMillis() + " ms");
                }
            }
            idler.idle(work);
        }
    }

    /** A connection whose HELLO has not fully arrived. */
    private static final class Handshake {
        final SocketChannel channel;
        final ByteBuffer hello = ByteBuffer.allocate(Frame.HEADER).order(ByteOrder.LITTLE_ENDIAN);
        final long deadline;

        Handshake(SocketChannel channel, long deadline) {
            this.channel = channel;
            this.deadline = deadline;
        }
    }

    private int acceptPending() {
        int work = 0;
        try {
            SocketChannel ch;
            while ((ch = listener.accept()) != null) {
                try {
                    ch.configureBlocking(false);
                } catch (IOException e) {
                    ch.close(); // neither a handshake nor closed: its descriptor would stay open
                    throw e;
                }
                handshakes.add(new Handshake(ch, System.nanoTime() + config.timeoutNanos()));
                work++;
            }
        } catch (IOException e) {
            LOG.log(Level.WARNING, "rank " + rank + ": accept failed: " + e);
        }
        for (Iterator<Handshake> it = handshakes.iterator(); it.hasNext(); ) {
            Handshake h = it.next();
            String from = "?";
            boolean removed = false;
            try {
                from = String.valueOf(h.channel.getRemoteAddress());
                if (h.channel.read(h.hello) < 0 || (h.hello.hasRemaining() && System.nanoTime() - h.deadline > 0)) {
                    throw new IOException("closed or silent before its hello");
                }
                if (h.hello.hasRemaining()) {
                    continue;
                }
                work++;
                ByteBuffer b = h.hello.flip();
                int type = b.getInt(Frame.OFF_TYPE);
                long fromRank = b.getLong(Frame.OFF_B);
                if (type != Frame.HELLO || b.getLong(Frame.OFF_A) != Frame.MAGIC || b.getInt(Frame.OFF_TAG) != Frame.VERSION) {
                    throw new IOException("not an rdma4j TCP hello (or another protocol version)");
                }
                if (b.getLong(Frame.OFF_C) != endpoint.secretHigh() || b.getLong(Frame.OFF_D) != endpoint.secretLow()) {
                    throw new IOException("wrong listener secret (not a rank of this job)");
                }
                if (fromRank < 0 || fromRank >= rank || connections[(int) fromRank] != null) {
                    throw new IOException("claims rank " + fromRank + ", which may not connect to rank " + rank + " now");
                }
                it.remove();
                removed = true;
                register((int) fromRank, h.channel, from);
            } catch (IOException e) {
                if (!removed) {
                    it.remove();
                }
                LOG.log(Level.WARNING, "rank " + rank + " refused connection from " + from + ": " + e.getMessage());
                try {
                    h.channel.close();
                } catch (IOException ignored) {
                    // refusing anyway
                }
            }
        }
        return work;
    }

    // ---- Operations (called by TcpConnection under this monitor).

    private void live(TcpConnection c) {
        state.checkConnection(c.peer, c.failure);
    }

    private TcpBuffer local(RegisteredBuffer b, long offset, long length, String what) {
        if (!(b instanceof TcpBuffer tb) || tb.owner != this) {
            throw new IllegalArgumentException(what + " buffer was not registered with this TCP transport: " + b);
        }
        if (tb.closed) {
            throw new IllegalStateException(what + " buffer is closed: " + b);
        }
        TransportState.checkAlive(tb.segment(), what, b);
        TransportState.checkRange(offset, length, tb.segment().byteSize(), what);
        return tb;
    }

    synchronized long isend(TcpConnection c, RegisteredBuffer source, long offset, long length, int tag) {
        live(c);
        TcpBuffer b = local(source, offset, length, "isend source");
        int s = requests.allocate(RequestTable.SEND, c.peer, b, offset, length);
        requests.tag[s] = tag;
        int cts = c.findCts(tag);
        if (cts >= 0) {
            long recvId = c.ctsRecvId(cts);
            long capacity = c.ctsCapacity(cts);
            c.removeCts(cts);
            matched(c, s, recvId, capacity);
        } else {
            c.sendWithoutCts(s);
        }
        return requests.id(s);
    }

    /** Send {@code slot} met the peer's receive {@code recvId} of {@code capacity} bytes. */
    void matched(TcpConnection c, int slot, long recvId, long capacity) {
        requests.remoteId[slot] = recvId;
        if (requests.length[slot] > capacity) {
            c.enqueueSendError(recvId, requests.length[slot]);
            requests.fail(slot, tooSmall(c, slot, capacity));
        } else {
            c.enqueue(Frame.DATA, requests.id(slot));
        }
    }

    /** The sender's side of a send larger than the receive its tag paired it with. */
    TransportException tooSmall(TcpConnection c, int slot, long capacity) {
        return new TransportException(c.peer, requests.describe(slot) + " failed: the matching irecv offered only "
                + capacity + " bytes");
    }

    synchronized long irecv(TcpConnection c, RegisteredBuffer target, long offset, long capacity, int tag) {
        live(c);
        TcpBuffer b = local(target, offset, capacity, "irecv target");
        TransportState.checkWritable(b.segment(), "irecv target");
        int s = requests.allocate(RequestTable.RECV, c.peer, b, offset, capacity);
        requests.tag[s] = tag;
        long id = requests.id(s);
        c.post(s);
        if (!requests.pending(s)) {
            // It took a message that had arrived before it, so no wait of it will drive the
            // connection: its CTS, which completes the peer's send, goes out now.
            flushOrLose(c);
        }
        return id;
    }

    synchronized long write(TcpConnection c, RegisteredBuffer source, long sourceOffset, RemoteBuffer target,
                            long targetOffset, long length, long immediate) {
        live(c);
        TcpBuffer b = local(source, sourceOffset, length, "write source");
        TransportState.checkRemote(c.peer, target, targetOffset, length, "write target");
        TransportState.checkImmediate(immediate, NO_IMMEDIATE_VALUE);
        int s = requests.allocate(RequestTable.WRITE, c.peer, b, sourceOffset, length);
        requests.remoteId[s] = target.key();
        requests.remoteOffset[s] = targetOffset;
        requests.immediate[s] = immediate;
        long id = requests.id(s);
        c.enqueue(Frame.WRITE, id);
        return id;
    }

    private static final long NO_IMMEDIATE_VALUE = Connection.NO_IMMEDIATE;

    synchronized long read(TcpConnection c, RegisteredBuffer target, long targetOffset, RemoteBuffer source,
                           long sourceOffset, long length) {
        live(c);
        TcpBuffer b = local(target, targetOffset, length, "read target");
        TransportState.checkWritable(b.segment(), "read target");
        TransportState.checkRemote(c.peer, source, sourceOffset, length, "read source");
        int s = requests.allocate(RequestTable.READ, c.peer, b, targetOffset, length);
        requests.remoteId[s] = source.key();
        requests.remoteOffset[s] = sourceOffset;
        long id = requests.id(s);
        c.enqueue(Frame.READ_REQ, id);
        return id;
    }

    synchronized long pollImmediate(TcpConnection c) {
        state.checkOpen();
        progress();
        long v = c.pollImmediateValue();
        if (c.failure == null) {
            try {
                c.resumeAfterPoll();
            } catch (IOException | RuntimeException e) {
                lost(c, e);
            }
        }
        if (v == NO_IMMEDIATE_VALUE && c.failure != null) {
            throw new TransportException(c.peer, "connection to peer " + c.peer + " failed: " + c.failure.getMessage(), c.failure);
        }
        return v;
    }

    synchronized void flush(TcpConnection c) {
        live(c);
        flushOrLose(c);
    }

    private void flushOrLose(TcpConnection c) {
        try {
            c.flushOutput();
        } catch (IOException | RuntimeException e) {
            lost(c, e);
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

    /** Moves bytes on every connection; returns a count of the work done (0 if idle). */
    private int progress() {
        if (state.closed()) {
            return 0;
        }
        selectedWork = 0;
        if (soleConnection != null && soleConnection.failure == null) {
            read(soleConnection);
        } else { // also once the sole connection failed: a select lets its channel's close finish
            try {
                selector.selectNow(onSelected);
            } catch (IOException e) {
                throw new TransportException(-1, "rank " + rank + ": selector failed: " + e, e);
            }
        }
        int work = selectedWork;
        for (TcpConnection c : connections) {
            if (c != null && c.failure == null && c.hasOutput()) {
                try {
                    work += c.flushOutput();
                } catch (IOException | RuntimeException e) {
                    lost(c, e);
                }
            }
        }
        return work;
    }

    private void onSelected(SelectionKey key) {
        read((TcpConnection) key.attachment());
    }

    private void read(TcpConnection c) {
        if (c.failure == null) {
            try {
                selectedWork += c.onReadable();
            } catch (IOException | RuntimeException e) {
                lost(c, e);
            }
        }
    }

    /**
     * The connection broke (an I/O error, the peer closed it, a protocol violation). When the
     * peer said in its last frame that it had lost another rank first, that rank is blamed; the
     * first rank lost is what this transport tells its other peers when it closes.
     */
    private void lost(TcpConnection c, Throwable cause) {
        if (c.failure != null) {
            return;
        }
        TransportException local = state.localMemoryFault(c.peer, cause);
        if (local != null) { // the stream cannot go on, and the fault is not the peer's
            failFromHere(c, local);
            return;
        }
        // a peer that broke the protocol is to blame itself, whatever it said before
        int culprit = c.peerLost >= 0 && c.peerLost != rank && !(cause instanceof TcpConnection.ProtocolViolation)
                ? c.peerLost : c.peer;
        if (firstLost < 0) {
            firstLost = culprit;
        }
        if (culprit == c.peer) {
            fail(c, cause);
        } else {
            failWith(c, new TransportException(culprit, "connection to peer " + c.peer + " (" + c.peerAddress
                    + ") closed: rank " + c.peer + " had lost rank " + culprit + " first (" + cause + ")", cause));
        }
    }

    /** Fails the connection and every pending request to its peer. */
    private void fail(TcpConnection c, Throwable cause) {
        if (c.failure != null) {
            return;
        }
        failWith(c, cause instanceof TransportException te && te.peer() == c.peer ? te
                : new TransportException(c.peer, "connection to peer " + c.peer + " (" + c.peerAddress + ") lost: " + cause, cause));
    }

    private void failWith(TcpConnection c, TransportException e) {
        if (e instanceof TcpConnection.ProtocolViolation || e.getCause() instanceof TcpConnection.ProtocolViolation) {
            LOG.log(Level.WARNING, "rank " + rank + ": " + e.getMessage());
        } else {
            LOG.log(Level.DEBUG, "rank " + rank + ": " + e.getMessage());
        }
        c.shutdown(e);
        requests.failPending(c.peer, e);
    }

    @Override
    public synchronized void abort(Throwable cause) {
        TransportException aborted = state.abort(cause);
        if (aborted != null) {
            tellPeersWhoWasLost();
            failAll(aborted);
        }
    }

    /**
     * Fails a connection for a reason of this side's (a buffer closed under it): as when the
     * transport closes, the peer first learns which rank this one lost first, if any (the
     * buffers of a collective that a lost rank broke are closed before the transport is).
     */
    private void failFromHere(TcpConnection c, TransportException cause) {
        tellWhoWasLost(c);
        fail(c, cause);
    }

    /** Before this side closes its connections after losing a rank: names that rank to the others (FAULT). */
    private void tellPeersWhoWasLost() {
        tellWhoWasLost(null);
    }

    /**
     * Writes FAULT naming the first rank lost to {@code only}, or to every peer but that rank
     * ({@code null}), taking turns among them until all are written or {@link #FAULT_WRITE_NANOS}
     * passed: best effort, under the lock, so peers whose sockets stay full (ranks that hang, the
     * usual reason to abort) cost that time once, not once each, and do not keep the FAULT from
     * the peers behind them.
     */
    private void tellWhoWasLost(TcpConnection only) {
        if (firstLost < 0) {
            return;
        }
        long deadline = System.nanoTime() + FAULT_WRITE_NANOS;
        while (true) {
            boolean unwritten = false;
            for (TcpConnection c : connections) {
                if (c != null && c.peer != firstLost && (only == null || c == only) && !c.faultWritten(firstLost, deadline)) {
                    unwritten = true;
                }
            }
            if (!unwritten || System.nanoTime() - deadline >= 0) {
                return;
            }
            Thread.onSpinWait();
        }
    }

    private void failAll(TransportException cause) {
        for (TcpConnection c : connections) {
            if (c != null) {
                fail(c, state.stopped(c.peer, cause));
            }
        }
        for (SocketChannel ch : connecting) {
            if (ch != null) {
                Closing.quietly(ch); // its connect ends; its thread sees the state
            }
        }
        requests.failPending(-1, cause);
    }

    @Override
    public synchronized void close() {
        if (state.closed()) {
            return;
        }
        tellPeersWhoWasLost();
        failAll(new TransportException(-1, "transport closed"));
        state.markClosed();
        for (Handshake h : handshakes) {
            try {
                h.channel.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
        handshakes.clear();
        closeQuietly();
        for (TcpBuffer b : allocated) {
            regions.remove(b.key);
            b.free();
        }
        allocated.clear();
        cache.clear();
    }

    private void closeQuietly() {
        if (listener != null) {
            Closing.quietly(listener);
        }
        if (selector != null) {
            Closing.quietly(selector);
        }
    }

    @Override
    public String toString() {
        return "TcpTransport[rank " + rank + "/" + size + " at " + endpoint.host() + ":" + endpoint.port() + "]";
    }
}
