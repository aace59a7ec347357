package io.rdma4j.transport.verbs;

import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.TransportTimeoutException;
import io.rdma4j.transport.bootstrap.Store;

import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * Sets up the connections of one verbs transport through the store, so that ranks may ask for
 * their connections in any order: while {@code connection(p)} waits for p, it also answers every
 * other rank that asked for a connection to this one (as a TCP listener accepts while its owner
 * connects elsewhere). Without that, a ring in which every rank first asks for its successor would
 * wait for itself.
 *
 * <p>Per pair and direction the store holds {@code rdma4j/verbs/<from>-><to>/endpoint} (a
 * {@link ConnectionDescriptor}) and {@code .../ready} (set once {@code from}'s QPs are in RTS). A
 * rank asking for a connection also appends its rank to the peer's inbox
 * ({@code rdma4j/verbs/inbox/<peer>}: a counter and one key per entry). One side of a connection
 * moves through PUBLISHED (its endpoint is in the store) and CONNECTED (its QPs are in RTS
 * towards the peer's endpoint, its ready key set) to established, once the peer's ready key shows
 * that no packet of ours can reach a QP that is not ready. Guarded by the transport's connect
 * lock; the transport's own lock is taken only around QP work.
 */
final class ConnectionBroker {
    private static final System.Logger LOG = System.getLogger(ConnectionBroker.class.getName());
    private static final String PREFIX = "rdma4j/verbs/";
    private static final int PUBLISHED = 1;
    private static final int CONNECTED = 2;
    private static final long MAX_PAUSE_NANOS = 20_000_000L;
    private static final Duration INBOX_ENTRY_WAIT = Duration.ofSeconds(10);

    private final VerbsTransport transport;
    private final Store store;
    private final int rank;
    private final VerbsConnection[] building;
    private final int[] stage;
    private final long[] deadline;
    /** Why each peer's last set-up was abandoned (null: it was not), for the caller waiting on it. */
    private final Throwable[] abandonedBecause;
    private long inboxSeen;

    ConnectionBroker(VerbsTransport transport, Store store, int rank, int size) {
        this.transport = transport;
        this.store = store;
        this.rank = rank;
        this.building = new VerbsConnection[size];
        this.stage = new int[size];
        this.deadline = new long[size];
        this.abandonedBecause = new Throwable[size];
    }

    /** Establishes the connection to {@code peer} (answering other ranks meanwhile) or fails naming it. */
    VerbsConnection connect(int peer, long timeoutNanos) {
        long until = System.nanoTime() + timeoutNanos;
        try {
            if (building[peer] == null) {
                start(peer, until, true);
            } else {
                deadline[peer] = Math.max(deadline[peer], until);
            }
            long pause = 50_000;
            while (true) {
                transport.checkUsable();
                // before advanceAll, which would abandon this peer at the same deadline with less to say
                if (System.nanoTime() - until > 0 && building[peer] != null) {
                    String waitedFor = stage[peer] == PUBLISHED ? "publish its verbs endpoint" : "report its queue pairs ready";
                    throw new TransportTimeoutException(peer, "peer " + peer + " did not " + waitedFor + " (store key '"
                            + key(peer, rank, stage[peer] == PUBLISHED ? "endpoint" : "ready") + "') within "
                            + timeoutNanos / 1_000_000 + " ms; rank " + rank + " gave up connecting to it");
                }
                int work = serveInbox() + advanceAll();
                transport.liveness.acceptPending();
                VerbsConnection done = transport.established(peer);
                if (done != null) {
                    return done;
                }
                if (building[peer] == null) {
                    Throwable why = abandonedBecause[peer];
                    throw new TransportException(peer, "rank " + rank + " could not connect to peer " + peer
                            + ": its set-up was abandoned" + (why == null ? "" : ": " + why.getMessage()), why);
                }
                pause = work > 0 ? 50_000 : Math.min(pause * 2, MAX_PAUSE_NANOS);
                LockSupport.parkNanos(pause);
            }
        } catch (RuntimeException e) {
            abandon(peer, e);
            if (e instanceof TransportException te) {
                throw te.peer() == peer ? te : new TransportException(peer, "rank " + rank + " could not connect to peer "
                        + peer + ": " + te.getMessage(), te);
            }
            throw new TransportException(peer, "rank " + rank + " could not connect to peer " + peer + ": " + e, e);
        }
    }

    /** Creates this side's QPs for {@code peer}, publishes their endpoint and, if asked, knocks at the peer's inbox. */
    private void start(int peer, long until, boolean knock) {
        VerbsConnection c = transport.newConnection(peer);
        building[peer] = c;
        stage[peer] = PUBLISHED;
        deadline[peer] = until;
        store.set(key(rank, peer, "endpoint"), c.descriptor().toBytes());
        if (knock) {
            long n = store.add(inbox(peer), 1);
            store.set(inbox(peer) + "/" + n, ByteBuffer.allocate(4).putInt(rank).array());
        }
    }

    /** Starts our side for every rank that asked for us since the last look. */
    private int serveInbox() {
        long asked = store.add(inbox(rank), 0);
        int work = 0;
        while (inboxSeen < asked) {
            long entry = inboxSeen + 1;
            int from;
            try {
                from = ByteBuffer.wrap(store.get(inbox(rank) + "/" + entry, INBOX_ENTRY_WAIT)).getInt();
            } catch (TransportTimeoutException neverSet) {
                // its knocker took the number and died (or its store set failed) before naming itself:
                // skipped, so that it holds up neither this connect nor later ones; a live knocker's
                // own deadline covers it
                LOG.log(Level.WARNING, "rank " + rank + ": connection request #" + entry + " was never filled in; skipped");
                from = -1;
            }
            inboxSeen = entry;
            if (from >= 0 && from < building.length && from != rank && building[from] == null
                    && transport.established(from) == null) {
                try {
                    start(from, System.nanoTime() + transport.config.timeoutNanos(), false);
                } catch (RuntimeException e) { // a failure for the rank that asked, not for the one awaited
                    abandon(from, e);
                    LOG.log(Level.WARNING, "rank " + rank + ": could not answer peer " + from + "'s connection request: " + e);
                }
                work++;
            }
        }
        return work;
    }

    /** Moves every half-built connection forward as far as the store allows, without waiting. */
    private int advanceAll() {
        int work = 0;
        for (int p = 0; p < building.length; p++) {
            VerbsConnection c = building[p];
            if (c == null) {
                continue;
            }
            try {
                if (stage[p] == PUBLISHED) {
                    byte[] endpoint = peek(key(p, rank, "endpoint"));
                    if (endpoint != null) {
                        ConnectionDescriptor remote = ConnectionDescriptor.fromBytes(p, endpoint);
                        // outside the transport's lock: an unreachable listener may take seconds
                        transport.connect(c, remote, Liveness.watch(p, remote.livenessHost(), remote.livenessPort()));
                        stage[p] = CONNECTED;
                        store.set(key(rank, p, "ready"), new byte[] {1});
                        work++;
                    }
                }
                if (stage[p] == CONNECTED && peek(key(p, rank, "ready")) != null) {
                    transport.promote(c); // aborted or closed meanwhile: abandoned below, and the caller's next check throws
                    building[p] = null;
                    work++;
                } else if (building[p] != null && System.nanoTime() - deadline[p] > 0) {
                    abandon(p, new TransportTimeoutException(p, "peer " + p + " did not complete the connection to rank " + rank));
                }
            } catch (RuntimeException e) {
                // p's failure (a bad descriptor, a QP transition, an unreachable liveness listener)
                // is p's alone: it ends p's set-up, and whoever waits for p learns why
                abandon(p, e);
                LOG.log(Level.DEBUG, "rank " + rank + ": connection set-up with peer " + p + " failed: " + e.getMessage());
            }
        }
        return work;
    }

    private byte[] peek(String key) {
        try {
            return store.get(key, Duration.ZERO);
        } catch (TransportTimeoutException notYet) {
            return null;
        }
    }

    private void abandon(int peer, Throwable cause) {
        VerbsConnection c = building[peer];
        if (c != null) {
            building[peer] = null;
            abandonedBecause[peer] = cause;
            transport.discard(c, cause);
        }
    }

    /** Releases every half-built connection (transport close or abort). */
    void abandonAll(Throwable cause) {
        for (int p = 0; p < building.length; p++) {
            abandon(p, cause);
        }
    }

    static String key(int from, int to, String what) {
        return PREFIX + from + "->" + to + "/" + what;
    }

    private static String inbox(int rank) {
        return PREFIX + "inbox/" + rank;
    }
}
