package io.rdma4j.transport.bootstrap;

import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.TransportTimeoutException;
import io.rdma4j.transport.internal.Closing;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A {@link Store} client of a {@link TcpStoreServer}; every rank (rank 0 too) has one. The rank
 * that hosts the server ({@link Builder#hostServer(boolean)}, by default rank 0) starts it and
 * stops it on {@link #close()}. Configured by builder or from the environment:
 * {@code MASTER_ADDR}, {@code MASTER_PORT}, {@code RDMA4J_JOB_TOKEN}, {@code RANK} and
 * {@code RDMA4J_TIMEOUT_MS}.
 *
 * <p>One request is in flight per client at a time (calls are serialised); a {@link #get} waits in
 * requests of at most {@value #GET_SLICE_MS} ms, so other threads of the client wait that long at
 * most, and an interrupt ends it.
 */
public final class TcpStore implements Store {
    public static final String ENV_MASTER_ADDR = "MASTER_ADDR";
    public static final String ENV_MASTER_PORT = "MASTER_PORT";
    public static final String ENV_JOB_TOKEN = "RDMA4J_JOB_TOKEN";
    public static final String ENV_RANK = "RANK";
    /** 1/0: whether this process hosts the server, overriding the RANK == 0 default (a launcher may host it). */
    public static final String ENV_STORE_SERVER = "RDMA4J_STORE_SERVER";
    /** Extra time a client waits for the server's answer beyond the wait it asked the server for. */
    private static final int ANSWER_SLACK_MS = 10_000;
    /** The longest server-side wait of one get request: how long other threads and an interrupt wait at most. */
    static final long GET_SLICE_MS = 1_000;
    /**
     * How long a request after a dropped connection tries to connect again: short, since a server
     * that is gone costs every later request this much (the fault board keeps asking it).
     */
    private static final Duration RECONNECT_WITHIN = Duration.ofSeconds(1);

    private final String host;
    private final int port;
    private final Duration timeout;
    private final String token;
    private final TcpStoreServer server;
    /** Replaced by a reconnect, read without the request lock by {@link #close}. */
    private volatile Socket socket;
    private DataInputStream in;
    private DataOutputStream out;
    /** Set without the request lock, so that {@link #close} can end a request that blocks holding it. */
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Why the connection was dropped, or null: after a request that got no whole answer, the next answer could be its. */
    private String dropped;
    private final ReentrantLock requestLock = new ReentrantLock(true);

    private TcpStore(Builder b) {
        this.host = b.host;
        this.timeout = b.timeout;
        this.token = b.token;
        this.server = b.hostServer ? TcpStoreServer.start(new InetSocketAddress(b.port), b.token) : null;
        this.port = server != null ? server.port() : b.port;
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try {
                this.socket = connect(host, port, Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
                dropped = null; // a new connection: what the handshake on an earlier one dropped is gone
                this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
                this.out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
                handshake(b.token, timeout.toMillis() + ANSWER_SLACK_MS);
                return;
            } catch (RuntimeException | Error e) {
                closeQuietly();
                throw e;
            } catch (IOException e) {
                // the server closes the oldest tokenless connections when too many wait at once:
                // under a flood of foreign connections this one may be among them; connect again
                if (System.nanoTime() - deadline >= 0) {
                    closeQuietly();
                    throw new TransportException(-1, "store at " + host + ":" + port + " failed during the handshake: "
                            + e, e);
                }
                Closing.quietly(socket); // connecting again regardless
            }
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A client configured from the environment (rank 0 hosts the server). */
    public static TcpStore fromEnvironment() {
        return builder().fromEnvironment(System.getenv()).build();
    }

    /** The server's port (useful when it was started on port 0). */
    public int port() {
        return port;
    }

    private static Socket connect(String host, int port, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        IOException last = null;
        long pause = 10;
        // The server may start after its clients (rank 0 may be slow), so refused connects retry.
        while (System.nanoTime() - deadline < 0) {
            Socket s = new Socket();
            try {
                long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
                s.connect(new InetSocketAddress(host, port), (int) Math.min(left, Integer.MAX_VALUE));
                s.setTcpNoDelay(true);
                return s;
            } catch (IOException e) {
                last = e;
                try {
                    s.close();
                } catch (IOException ignored) {
                    // never connected
                }
            }
            try {
                Thread.sleep(pause);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TransportException(-1, "interrupted while connecting to the store at " + host + ":" + port);
            }
            pause = Math.min(pause * 2, 500);
        }
        throw new TransportTimeoutException(-1, "could not connect to the store at " + host + ":" + port
                + " within " + timeout.toMillis() + " ms (MASTER_ADDR/MASTER_PORT): " + last);
    }

    /** @param answerMs how long the server may take to answer it */
    private void handshake(String token, long answerMs) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream hello = new DataOutputStream(bytes);
        hello.writeByte(StoreProtocol.HELLO);
        hello.writeInt(StoreProtocol.MAGIC);
        hello.writeInt(StoreProtocol.VERSION);
        StoreProtocol.writeBytes(hello, token.getBytes(StandardCharsets.UTF_8));
        DataInputStream answer = exchangeWithin(bytes.toByteArray(), "handshake", answerMs);
        if (answer.readByte() != StoreProtocol.OK) {
            throw new StoreAuthenticationException("the store at " + host + ":" + port
                    + " refused this client (" + new String(answer.readAllBytes(), StandardCharsets.UTF_8)
                    + "); the job token (" + ENV_JOB_TOKEN + ") must be the job's");
        }
    }

    @Override
    public void set(String key, byte[] value) {
        request(StoreProtocol.SET, key, value, 0, "set", timeout.toMillis());
    }

    /**
     * Waits in requests of at most {@link #GET_SLICE_MS}: between them the client serves its other
     * threads' requests (one request is in flight at a time), and an interrupt of the waiting
     * thread ends the wait (a platform thread's blocking socket read does not see it).
     */
    @Override
    public byte[] get(String key, Duration waitFor) {
        long waitMs = Math.max(0, TimeUnit.MILLISECONDS.convert(waitFor)); // saturates: FOREVER waits for good
        long start = System.nanoTime();
        while (true) {
            if (Thread.currentThread().isInterrupted()) {
                throw new TransportException(-1, "interrupted while waiting for store key '" + key + "' (store at "
                        + host + ":" + port + ")");
            }
            long leftMs = waitMs - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            long sliceMs = Math.clamp(leftMs, 0, GET_SLICE_MS);
            DataInputStream answer;
            try {
                answer = request(StoreProtocol.GET, key, null, sliceMs, "get", sliceMs);
            } catch (TransportTimeoutException notYet) {
                if (leftMs <= sliceMs) {
                    throw new TransportTimeoutException(-1, "store key '" + key + "' was not set within " + waitMs
                            + " ms (store at " + host + ":" + port + ")");
                }
                continue;
            }
            try {
                return StoreProtocol.readBytes(answer, StoreProtocol.MAX_FRAME);
            } catch (IOException e) {
                throw failure("get", key, e);
            }
        }
    }

    @Override
    public long add(String key, long delta) {
        try {
            return request(StoreProtocol.ADD, key, null, delta, "add", timeout.toMillis()).readLong();
        } catch (IOException e) {
            throw failure("add", key, e);
        }
    }

    @Override
    public boolean delete(String key) {
        try {
            return request(StoreProtocol.DELETE, key, null, 0, "delete", timeout.toMillis()).readBoolean();
        } catch (IOException e) {
            throw failure("delete", key, e);
        }
    }

    /**
     * Sends one request and returns the answer's body after its status byte. One request is in
     * flight at a time; the lock is fair, so a thread whose get waits in slices does not take it
     * back ahead of the others between them.
     */
    private DataInputStream request(byte op, String key, byte[] value, long arg, String what, long serverWaitMs) {
        StoreProtocol.checkKey(key);
        if (value != null) {
            StoreProtocol.checkValue(key, value);
        }
        requestLock.lock();
        try {
            return requestLocked(op, key, value, arg, what, serverWaitMs);
        } finally {
            requestLock.unlock();
        }
    }

    private DataInputStream requestLocked(byte op, String key, byte[] value, long arg, String what, long serverWaitMs) {
        if (closed.get()) {
            throw new IllegalStateException("store client is closed (" + what + " '" + key + "')");
        }
        if (dropped != null) {
            reconnect(what, key);
        }
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream req = new DataOutputStream(bytes);
            req.writeByte(op);
            StoreProtocol.writeString(req, key);
            if (value != null) {
                StoreProtocol.writeBytes(req, value);
            } else if (op != StoreProtocol.DELETE) {
                req.writeLong(arg);
            }
            DataInputStream answer = exchange(bytes.toByteArray(), what + " '" + key + "'", serverWaitMs);
            byte status = answer.readByte();
            if (status == StoreProtocol.NOT_FOUND) {
                throw new TransportTimeoutException(-1, "store key '" + key + "' was not set within "
                        + serverWaitMs + " ms (store at " + host + ":" + port + ")");
            }
            if (status != StoreProtocol.OK) {
                throw new TransportException(-1, "store at " + host + ":" + port + " failed " + what + " '" + key
                        + "': " + new String(answer.readAllBytes(), StandardCharsets.UTF_8));
            }
            return answer;
        } catch (IOException e) {
            throw failure(what, key, e);
        }
    }

    /**
     * One request and its answer. A request that gets no whole answer (none in time, or a broken
     * stream) drops the connection: the server may still answer it, and that answer would be read
     * as the next request's. Not a {@link TransportTimeoutException}, which means "key not set yet".
     */
    private DataInputStream exchange(byte[] frame, String what, long serverWaitMs) throws IOException {
        long answerMs = serverWaitMs > Long.MAX_VALUE - ANSWER_SLACK_MS ? Long.MAX_VALUE : serverWaitMs + ANSWER_SLACK_MS;
        return exchangeWithin(frame, what, answerMs);
    }

    private DataInputStream exchangeWithin(byte[] frame, String what, long answerMs) throws IOException {
        try {
            socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, answerMs));
            StoreProtocol.writeFrame(out, frame);
            return new DataInputStream(new ByteArrayInputStream(StoreProtocol.readFrame(in, StoreProtocol.MAX_FRAME)));
        } catch (SocketTimeoutException e) {
            drop("the server did not answer " + what + " within " + answerMs + " ms");
            throw new TransportException(-1, "store at " + host + ":" + port + " did not answer " + what + " within "
                    + answerMs + " ms; the connection was dropped", e);
        } catch (IOException e) {
            drop(what + " failed: " + e);
            throw e;
        }
    }

    /**
     * A new connection in place of a dropped one, for the request about to be sent: the dropped
     * one's late answer stays with the old socket. Fails the request, and leaves the client
     * dropped for the next one to try again, when the server cannot be reached or does not
     * let this client in.
     */
    private void reconnect(String what, String key) {
        String why = dropped;
        try {
            socket = connect(host, port, RECONNECT_WITHIN);
            checkNotClosedDuring(what, key); // a close that did not see this socket yet
            in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
            // as short as the connect: a stalled server would otherwise hold every retry this long
            handshake(token, RECONNECT_WITHIN.toMillis());
            checkNotClosedDuring(what, key);
            dropped = null;
        } catch (IllegalStateException closedMeanwhile) {
            Closing.quietly(socket);
            throw closedMeanwhile;
        } catch (IOException | RuntimeException e) {
            Closing.quietly(socket);
            dropped = why;
            throw new TransportException(-1, "store client cannot " + what + " '" + key + "': its connection to "
                    + host + ":" + port + " was dropped after " + why + ", and connecting again failed: " + e, e);
        }
    }

    private void checkNotClosedDuring(String what, String key) {
        if (closed.get()) {
            throw new IllegalStateException("store client was closed during " + what + " '" + key + "'");
        }
    }

    private void drop(String why) {
        dropped = why;
        Closing.quietly(socket);
    }

    private TransportException failure(String what, String key, IOException e) {
        if (closed.get()) {
            return new TransportException(-1, "store client was closed during " + what + " '" + key + "'", e);
        }
        return new TransportException(-1, "store at " + host + ":" + port + " failed " + what + " '" + key + "': " + e, e);
    }

    private void closeQuietly() {
        if (socket != null) {
            Closing.quietly(socket);
        }
        if (server != null) {
            server.close();
        }
    }

    /**
     * Disconnects; the hosting rank also stops the server. Idempotent. Does not wait for the
     * lock that requests hold: a {@link #get} blocked on a key that never comes (a peer that died
     * before setting it) fails at once with "closed" instead of holding close up for its wait.
     */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            closeQuietly();
        }
    }

    @Override
    public String toString() {
        return "TcpStore[" + host + ":" + port + (server != null ? ", hosting" : "") + "]";
    }

    public static final class Builder {
        private String host = "127.0.0.1";
        private int port = -1;
        private String token;
        private Duration timeout = Duration.ofSeconds(60);
        private boolean hostServer;

        private Builder() {
        }

        /**
         * Reads MASTER_ADDR, MASTER_PORT, RDMA4J_JOB_TOKEN, RDMA4J_TIMEOUT_MS and RANK (rank 0
         * hosts the server unless RDMA4J_STORE_SERVER says otherwise).
         */
        public Builder fromEnvironment(Map<String, String> env) {
            String addr = value(env, ENV_MASTER_ADDR);
            if (addr != null) {
                host = addr.trim();
            }
            String portValue = value(env, ENV_MASTER_PORT);
            if (portValue != null) {
                port = (int) parse(ENV_MASTER_PORT, portValue, 65535);
            }
            String tokenValue = value(env, ENV_JOB_TOKEN);
            if (tokenValue != null) {
                token = tokenValue;
            }
            String timeoutMs = value(env, io.rdma4j.transport.TransportConfig.ENV_TIMEOUT_MS);
            if (timeoutMs != null) {
                timeout = Duration.ofMillis(parse(io.rdma4j.transport.TransportConfig.ENV_TIMEOUT_MS, timeoutMs,
                        io.rdma4j.transport.TransportConfig.MAX_TIMEOUT.toMillis()));
            }
            String rank = value(env, ENV_RANK);
            if (rank != null) {
                hostServer = parse(ENV_RANK, rank, Integer.MAX_VALUE) == 0;
            }
            String server = value(env, ENV_STORE_SERVER);
            if (server != null) {
                hostServer = parse(ENV_STORE_SERVER, server, Integer.MAX_VALUE) != 0;
            }
            return this;
        }

        /**
         * {@code name}'s value, null when unset or blank: a blank variable is an unset one, as for
         * the rank and size (EnvContract) and the transport's settings (launchers and wrappers
         * export empty ones).
         */
        private static String value(Map<String, String> env, String name) {
            String v = env.get(name);
            return v == null || v.isBlank() ? null : v;
        }

        private static long parse(String name, String v, long max) {
            long n;
            try {
                n = Long.parseLong(v.trim());
            } catch (NumberFormatException e) {
                n = -1;
            }
            if (n < 0 || n > max) {
                throw new IllegalArgumentException(name + "=" + v + ": not an integer from 0 to " + max);
            }
            return n;
        }

        public Builder address(String host) { this.host = host; return this; }

        public Builder port(int port) { this.port = port; return this; }

        public Builder token(String token) { this.token = token; return this; }

        /** Connect timeout and the bound of every non-waiting request. */
        public Builder timeout(Duration timeout) { this.timeout = timeout; return this; }

        /** Whether this client also starts the server (rank 0). */
        public Builder hostServer(boolean hostServer) { this.hostServer = hostServer; return this; }

        public TcpStore build() {
            if (host == null || host.isBlank()) {
                throw new IllegalArgumentException("store address missing: set " + ENV_MASTER_ADDR + " or Builder.address");
            }
            if (port < 0 || port > 65535 || (port == 0 && !hostServer)) {
                throw new IllegalArgumentException("store port " + (port < 0 ? "missing" : "invalid (" + port + ")")
                        + ": set " + ENV_MASTER_PORT + " or Builder.port");
            }
            if (token == null || token.isEmpty()) {
                throw new IllegalArgumentException("job token missing: set " + ENV_JOB_TOKEN + " or Builder.token");
            }
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("store timeout must be positive, was " + timeout);
            }
            return new TcpStore(this);
        }
    }
}
