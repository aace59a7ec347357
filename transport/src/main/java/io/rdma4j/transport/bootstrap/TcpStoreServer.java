package io.rdma4j.transport.bootstrap;

import io.rdma4j.transport.internal.Closing;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The key/value server behind {@link TcpStore}, hosted by rank 0 on MASTER_ADDR:MASTER_PORT.
 * One acceptor thread and one virtual thread per client (bootstrap traffic is tiny; a blocking
 * handler per client keeps waits simple). A client must first present the job token, within
 * {@value #HELLO_TIMEOUT_MS} ms (the whole hello, however it trickles in); one that does not is answered with an error, logged and
 * disconnected. At most {@value #MAX_UNAUTHENTICATED} connections may wait for their token at
 * once: a new one beyond that closes the oldest, so that a flood of idle connections neither
 * piles up nor locks out the ranks (whose token arrives right after they connect). After the
 * token, a malformed request is answered with an error and the connection goes on; one whose
 * frame is too large to skip is answered and closed; the values held are bounded in total. {@link #close()} closes every
 * socket and joins every thread it started.
 */
public final class TcpStoreServer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(TcpStoreServer.class.getName());
    /** How long a fresh connection may take to present its token (a rank sends it at once). */
    static final int HELLO_TIMEOUT_MS = 3_000;
    private static final long HELLO_TIMEOUT_NANOS = TimeUnit.MILLISECONDS.toNanos(HELLO_TIMEOUT_MS);
    /** Connections that may wait for their token at once; more evict the oldest. */
    static final int MAX_UNAUTHENTICATED = 64;
    /** Bytes of values the store holds at most: a job's bootstrap needs kilobytes per rank. */
    static final long MAX_STORED_BYTES = 1L << 30;

    private final byte[] token;
    private final ServerSocket server;
    private final Thread acceptor;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<String, byte[]> values = new HashMap<>();
    private final Set<Socket> clients = new HashSet<>();
    /** Connections that have not presented their token yet, oldest first. */
    private final ArrayDeque<Socket> unauthenticated = new ArrayDeque<>();
    private long storedBytes;
    private long evicted;
    private final Set<Thread> handlers = new HashSet<>();
    private boolean closed;

    private TcpStoreServer(InetSocketAddress bind, String token) throws IOException {
        if (token == null || token.isEmpty()) {
            throw new IllegalArgumentException("the store server needs a non-empty job token (RDMA4J_JOB_TOKEN)");
        }
        this.token = token.getBytes(StandardCharsets.UTF_8);
        this.server = new ServerSocket();
        server.setReuseAddress(true);
        server.bind(bind, 1024);
        this.acceptor = Thread.ofPlatform().daemon().name("rdma4j-store-acceptor-" + port()).unstarted(this::acceptLoop);
        acceptor.start();
    }

    /** Starts a server listening on {@code bind} (port 0 picks a free port; see {@link #port()}). */
    public static TcpStoreServer start(InetSocketAddress bind, String token) {
        try {
            return new TcpStoreServer(bind, token);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the store server on " + bind + ": " + e.getMessage(), e);
        }
    }

    public int port() {
        return server.getLocalPort();
    }

    /** Clients currently connected (handshaken or not). */
    public int clientCount() {
        lock.lock();
        try {
            return clients.size();
        } finally {
            lock.unlock();
        }
    }

    private void acceptLoop() {
        while (true) {
            Socket s;
            try {
                s = server.accept();
            } catch (IOException e) {
                if (!server.isClosed()) {
                    LOG.log(Level.WARNING, "store server accept failed, stopping: " + e);
                }
                return;
            }
            lock.lock();
            try {
                if (closed) {
                    Closing.quietly(s);
                    return;
                }
                clients.add(s);
                if (unauthenticated.size() >= MAX_UNAUTHENTICATED) {
                    Socket oldest = unauthenticated.removeFirst();
                    if (evicted++ == 0) {
                        LOG.log(Level.WARNING, "store server: more than " + MAX_UNAUTHENTICATED + " connections without "
                                + "a token at once; closing the oldest (first: " + oldest.getRemoteSocketAddress() + ")");
                    }
                    Closing.quietly(oldest);
                }
                unauthenticated.addLast(s);
                Thread t = Thread.ofVirtual().name("rdma4j-store-client-" + s.getRemoteSocketAddress())
                        .unstarted(() -> serve(s));
                handlers.add(t);
                t.start();
            } finally {
                lock.unlock();
            }
        }
    }

    private void serve(Socket s) {
        try (s) {
            s.setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            s.setSoTimeout(HELLO_TIMEOUT_MS);
            if (!handshake(s, in, out)) { // an admitted connection left the waiting list before its OK
                leaveWaiting(s);
                return;
            }
            s.setSoTimeout(0);
            while (true) {
                byte[] frame;
                try {
                    frame = StoreProtocol.readFrame(in, StoreProtocol.MAX_FRAME);
                } catch (java.io.EOFException | SocketException e) {
                    return; // client left
                } catch (IOException tooLarge) { // its bytes cannot be skipped: answer, then close
                    StoreProtocol.writeFrame(out, error(tooLarge.getMessage()));
                    return;
                }
                byte[] response;
                try {
                    response = handle(frame);
                } catch (IOException malformed) { // the frame was read whole: the next one is intact
                    response = error("malformed store request: " + malformed.getMessage());
                }
                StoreProtocol.writeFrame(out, response);
            }
        } catch (IOException | RuntimeException e) {
            if (!isClosed()) {
                LOG.log(Level.DEBUG, "store client " + s.getRemoteSocketAddress() + " dropped: " + e);
            }
        } finally {
            lock.lock();
            try {
                clients.remove(s);
                handlers.remove(Thread.currentThread());
            } finally {
                lock.unlock();
            }
        }
    }

    private boolean handshake(Socket s, DataInputStream in, DataOutputStream out) throws IOException {
        String reason;
        try {
            DataInputStream hello = new DataInputStream(new ByteArrayInputStream(StoreProtocol.readFrame(
                    new DataInputStream(new HelloInput(in, s, System.nanoTime() + HELLO_TIMEOUT_NANOS)),
                    StoreProtocol.MAX_HELLO_FRAME)));
            if (hello.readByte() != StoreProtocol.HELLO || hello.readInt() != StoreProtocol.MAGIC) {
                reason = "not an rdma4j store client";
            } else if (hello.readInt() != StoreProtocol.VERSION) {
                reason = "store protocol version mismatch (server speaks " + StoreProtocol.VERSION + ")";
            } else if (!MessageDigest.isEqual(token, StoreProtocol.readBytes(hello, StoreProtocol.MAX_HELLO_FRAME))) {
                reason = "job token rejected";
            } else if (!leaveWaiting(s)) {
                return false; // evicted while its hello was on the way: the socket is closed
            } else {
                // only now, off the waiting list, can no eviction close it after the client's OK
                StoreProtocol.writeFrame(out, new byte[] {StoreProtocol.OK});
                return true;
            }
        } catch (IOException e) {
            reason = "bad handshake: " + e.getMessage();
        }
        LOG.log(Level.WARNING, "store server refused client " + s.getRemoteSocketAddress() + ": " + reason);
        try {
            StoreProtocol.writeFrame(out, error(reason));
        } catch (IOException ignored) {
            // the client is gone already; nothing to tell it
        }
        return false;
    }

    /**
     * The reads of a hello: each waits only for what is left of the handshake's one deadline (with
     * the socket timeout alone, a client that trickles a byte in under it per read keeps its
     * connection, and a slot among those waiting for their token, for hours).
     */
    private static final class HelloInput extends FilterInputStream {
        private final Socket socket;
        private final long deadlineNanos;

        HelloInput(InputStream in, Socket socket, long deadlineNanos) {
            super(in);
            this.socket = socket;
            this.deadlineNanos = deadlineNanos;
        }

        private void arm() throws IOException {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                throw new SocketTimeoutException("no whole hello within " + HELLO_TIMEOUT_MS + " ms");
            }
            socket.setSoTimeout((int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
        }

        @Override
        public int read() throws IOException {
            arm();
            return super.read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            arm();
            return super.read(b, off, len);
        }
    }

    /** Takes {@code s} off the list of connections waiting for their token; false if it was not on it. */
    private boolean leaveWaiting(Socket s) {
        lock.lock();
        try {
            return unauthenticated.remove(s);
        } finally {
            lock.unlock();
        }
    }

    private byte[] handle(byte[] frame) throws IOException {
        DataInputStream req = new DataInputStream(new ByteArrayInputStream(frame));
        byte op = req.readByte();
        String key = StoreProtocol.readString(req);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream resp = new DataOutputStream(bytes);
        lock.lock();
        try {
            switch (op) {
                case StoreProtocol.SET -> {
                    byte[] value = StoreProtocol.readBytes(req, StoreProtocol.MAX_FRAME);
                    endOf(req);
                    byte[] old = values.get(key);
                    long after = storedBytes + value.length - (old == null ? 0 : old.length);
                    if (after > MAX_STORED_BYTES) {
                        return error("store full: setting '" + key + "' would hold " + after + " bytes (limit "
                                + MAX_STORED_BYTES + ")");
                    }
                    values.put(key, value);
                    storedBytes = after;
                    changed.signalAll();
                    resp.writeByte(StoreProtocol.OK);
                }
                case StoreProtocol.GET -> {
                    long remaining = TimeUnit.MILLISECONDS.toNanos(req.readLong());
                    endOf(req);
                    byte[] v;
                    while ((v = values.get(key)) == null && remaining > 0 && !closed) {
                        remaining = changed.awaitNanos(remaining);
                    }
                    if (v == null) {
                        resp.writeByte(StoreProtocol.NOT_FOUND);
                    } else {
                        resp.writeByte(StoreProtocol.OK);
                        StoreProtocol.writeBytes(resp, v);
                    }
                }
                case StoreProtocol.ADD -> {
                    long delta = req.readLong();
                    endOf(req);
                    byte[] old = values.get(key);
                    long v = (old == null ? 0 : StoreProtocol.parseCounter(key, old)) + delta;
                    byte[] counter = StoreProtocol.counterBytes(v);
                    values.put(key, counter);
                    storedBytes += counter.length - (old == null ? 0 : old.length);
                    changed.signalAll();
                    resp.writeByte(StoreProtocol.OK);
                    resp.writeLong(v);
                }
                case StoreProtocol.DELETE -> {
                    endOf(req);
                    byte[] old = values.remove(key);
                    boolean existed = old != null;
                    storedBytes -= existed ? old.length : 0;
                    resp.writeByte(StoreProtocol.OK);
                    resp.writeBoolean(existed);
                }
                default -> {
                    return error("unknown store operation " + op);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return error("store server shutting down");
        } catch (IllegalStateException e) {
            return error(e.getMessage());
        } finally {
            lock.unlock();
        }
        return bytes.toByteArray();
    }

    /** A request must end where its frame ends: trailing bytes mean a malformed or foreign client. */
    private static void endOf(DataInputStream req) throws IOException {
        if (req.available() > 0) {
            throw new IOException(req.available() + " unexpected bytes after the request");
        }
    }

    /** Connections that have not presented their token yet (at most {@link #MAX_UNAUTHENTICATED}). */
    public int unauthenticatedCount() {
        lock.lock();
        try {
            return unauthenticated.size();
        } finally {
            lock.unlock();
        }
    }

    private static byte[] error(String message) {
        byte[] m = message.getBytes(StandardCharsets.UTF_8);
        byte[] b = new byte[1 + m.length];
        b[0] = StoreProtocol.ERROR;
        System.arraycopy(m, 0, b, 1, m.length);
        return b;
    }

    private boolean isClosed() {
        lock.lock();
        try {
            return closed;
        } finally {
            lock.unlock();
        }
    }

    /** Disconnects every client and stops every thread of the server. Idempotent. */
    @Override
    public void close() {
        Set<Thread> toJoin;
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            changed.signalAll();
            Closing.quietly(server);
            clients.forEach(Closing::quietly);
            toJoin = new HashSet<>(handlers);
        } finally {
            lock.unlock();
        }
        join(acceptor);
        toJoin.forEach(TcpStoreServer::join);
    }

    private static void join(Thread t) {
        try {
            if (!t.join(java.time.Duration.ofSeconds(10))) {
                LOG.log(Level.WARNING, "store server thread " + t.getName() + " did not stop within 10 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "TcpStoreServer[" + server.getLocalSocketAddress() + "]";
    }
}
