package io.rdma4j.transport.verbs;

import io.rdma4j.transport.internal.Closing;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;

/**
 * A TCP connection beside every verbs connection, carrying no data: it tells that the peer's
 * process is gone as soon as its kernel closes the socket, where the queue pairs alone learn it
 * only when a work request exhausts its transport retries (timeout x (retry count + 1), seconds
 * on a NIC and far longer on Soft-RoCE, whose timeouts must be long). A peer whose whole host
 * vanished sends no FIN; the queue pairs' retries still catch that.
 *
 * <p>Each transport listens on one port; each side of a connection connects to the peer's
 * listener and watches only that socket: the peer holds the accepted end, never reads it, and its
 * exit (or its transport's close) closes it. Before closing, a transport writes 4 bytes on every
 * accepted end: the rank it lost first, if it lost one, so that its peers blame that rank and not
 * the one that gave up after it; {@link #CLOSED_CLEANLY} if it closes without a fault, so that its
 * peers let the requests it already served finish instead of failing them as after a death. A
 * process that dies writes nothing. Best effort: a listener or a connection that cannot be had
 * is logged and the QP retries remain the only detection for that peer.
 */
final class Liveness implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Liveness.class.getName());
    private static final int CONNECT_MILLIS = 5_000;
    /** What a transport that closes without a fault says; a lost rank is said as itself (>= 0). */
    static final int CLOSED_CLEANLY = -2;
    /** Nothing said: the peer died, or aborted without naming a rank. */
    static final int NOTHING_SAID = -1;

    private final ServerSocketChannel listener;
    private final byte[] host;
    private final int port;
    private final List<SocketChannel> accepted = new ArrayList<>();

    private Liveness(ServerSocketChannel listener, byte[] host, int port) {
        this.listener = listener;
        this.host = host;
        this.port = port;
    }

    /** Listens on {@code address} (an ephemeral port); without a listener if that fails. */
    static Liveness listen(InetAddress address, int backlog) {
        try {
            ServerSocketChannel ch = ServerSocketChannel.open();
            try {
                ch.bind(new InetSocketAddress(address, 0), Math.max(50, backlog));
                ch.configureBlocking(false);
                return new Liveness(ch, address.getAddress(), ((InetSocketAddress) ch.getLocalAddress()).getPort());
            } catch (IOException | RuntimeException e) {
                ch.close();
                throw e;
            }
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, "no liveness listener on " + address.getHostAddress() + " (" + e
                    + "): a dead peer is detected only by queue pair retries");
            return new Liveness(null, new byte[0], 0);
        }
    }

    /** The address peers connect to (empty without a listener). */
    byte[] host() {
        return host.clone();
    }

    /** The port peers connect to, 0 without a listener. */
    int port() {
        return port;
    }

    /** Takes the peers' connections that arrived; they are held, never read, and closed with this. */
    synchronized void acceptPending() {
        if (listener == null) {
            return;
        }
        try {
            SocketChannel ch;
            while ((ch = listener.accept()) != null) {
                accepted.add(ch);
            }
        } catch (IOException e) {
            LOG.log(Level.DEBUG, "liveness listener: " + e);
        }
    }

    /** A watch on {@code peer}'s listener at {@code host}:{@code port}, or null when it has none or cannot be reached. */
    static Watch watch(int peer, byte[] host, int port) {
        if (port == 0) {
            return null;
        }
        InetSocketAddress to;
        try {
            to = new InetSocketAddress(InetAddress.getByAddress(host), port);
        } catch (UnknownHostException e) {
            LOG.log(Level.WARNING, "peer " + peer + " published a malformed liveness address: " + e);
            return null;
        }
        SocketChannel ch = null;
        try {
            ch = SocketChannel.open();
            ch.socket().connect(to, CONNECT_MILLIS);
            ch.configureBlocking(false);
            return new Watch(ch);
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, "cannot reach the liveness listener of peer " + peer + " at " + to + " (" + e
                    + "): its death is detected only by queue pair retries");
            if (ch != null) {
                Closing.quietly(ch);
            }
            return null;
        }
    }

    @Override
    public void close() {
        close(NOTHING_SAID);
    }

    /**
     * Closes every socket, after telling the peers on them {@code said}: the rank lost first (>= 0),
     * {@link #CLOSED_CLEANLY}, or {@link #NOTHING_SAID}.
     */
    synchronized void close(int said) {
        ByteBuffer word = ByteBuffer.allocate(Integer.BYTES);
        for (SocketChannel ch : accepted) {
            if (said != NOTHING_SAID) {
                try {
                    ch.write(word.clear().putInt(0, said)); // 4 bytes into an empty socket buffer
                } catch (IOException ignored) {
                    // that peer is gone too
                }
            }
            Closing.quietly(ch);
        }
        accepted.clear();
        if (listener != null) {
            Closing.quietly(listener);
        }
    }

    /**
     * One side's socket to a peer's listener; the peer writes nothing on it but, as it closes,
     * what {@link #close(int)} says, so a read ends only with the peer.
     */
    static final class Watch implements AutoCloseable {
        private final SocketChannel channel;
        private final ByteBuffer probe = ByteBuffer.allocateDirect(Integer.BYTES);
        private int said = NOTHING_SAID;

        private Watch(SocketChannel channel) {
            this.channel = channel;
        }

        /** Whether the peer's end is closed (end of stream or reset); non-blocking reads, no allocation. */
        boolean peerGone() {
            try {
                int n;
                while ((n = channel.read(probe)) > 0) {
                    if (!probe.hasRemaining()) {
                        said = probe.getInt(0);
                        probe.clear();
                    }
                }
                return n < 0;
            } catch (IOException e) {
                return true;
            }
        }

        /** The rank the peer said it had lost before it closed, or -1. */
        int lostFirst() {
            return said >= 0 ? said : -1;
        }

        /** Whether the peer said, before its socket closed, that it closed without a fault. */
        boolean closedCleanly() {
            return said == CLOSED_CLEANLY;
        }

        @Override
        public void close() {
            Closing.quietly(channel);
        }
    }
}
