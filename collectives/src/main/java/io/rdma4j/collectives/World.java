package io.rdma4j.collectives;

import io.rdma4j.collectives.algo.Hierarchy;
import io.rdma4j.collectives.core.Engine;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.bootstrap.Store;

import java.time.Duration;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What a world communicator and its splits share: the engine (one collective at a time over
 * the shared transport), the transports, the store, the topology, the policy and the context
 * ids. Released by the world communicator, which closes only what it created.
 */
final class World {
    final Engine engine;
    final Transport transport;
    final Store store;
    /** The per-host shared-memory transport of the two-hop allreduce, or null. */
    final Transport localTransport;
    final Topology topology;
    /** The two-hop groups, or null when the world does not span several uniform hosts. */
    final Hierarchy hierarchy;
    final AlgorithmPolicy policy;
    final ContextIds contextIds = new ContextIds();
    /** The order of the asynchronous calls of this world and its splits, which share {@link #engine}. */
    final SharedIssueOrder issueOrder = new SharedIssueOrder();
    /** Which of the worlds built on its store this is: its size and count (see {@link io.rdma4j.collectives.core.CommState#world}). */
    final String id;
    private final boolean ownsTransport;
    private final boolean ownsStore;
    private final boolean ownsLocal;
    /**
     * The calls of the splits not closed yet: the world closes them with itself, so that no
     * split's progress thread outlives the transport it drives.
     */
    private final Set<IssueOrder> openSplits = ConcurrentHashMap.newKeySet();

    /**
     * The transports an open world runs over. Every world numbers its communicators' message tags
     * from the same context id, so a second open world on one transport would take the first's
     * messages as its own (equal calls on the two would even match and mix their data).
     */
    private static final Set<Transport> IN_USE = Collections.newSetFromMap(new IdentityHashMap<>());

    /** Takes {@code t} for a world being built; refused while another open world runs over it. */
    static void claim(Transport t) {
        synchronized (IN_USE) {
            if (!IN_USE.add(t)) {
                throw new IllegalStateException("the transport of rank " + t.rank() + " (" + t.provider()
                        + ") already serves an open world communicator, whose messages a second one would take"
                        + " as its own: use split() for a subgroup, or close that communicator first");
            }
        }
    }

    /** {@code t} no longer serves a world (closed, or its build failed). */
    static void release(Transport t) {
        synchronized (IN_USE) {
            IN_USE.remove(t);
        }
    }

    World(Engine engine, Transport transport, boolean ownsTransport, Store store, boolean ownsStore, String id,
          Transport localTransport, boolean ownsLocal, Topology topology, Hierarchy hierarchy, AlgorithmPolicy policy) {
        this.engine = engine;
        this.id = id;
        this.transport = transport;
        this.ownsTransport = ownsTransport;
        this.store = store;
        this.ownsStore = ownsStore;
        this.localTransport = localTransport;
        this.ownsLocal = ownsLocal;
        this.topology = topology;
        this.hierarchy = hierarchy;
        this.policy = policy;
    }

    /** Unblocks everything waiting in the transports. */
    void abortTransports(CollectiveException cause) {
        transport.abort(cause);
        if (localTransport != null) {
            localTransport.abort(cause);
        }
    }

    void splitOpened(IssueOrder split) {
        openSplits.add(split);
    }

    void splitClosed(IssueOrder split) {
        openSplits.remove(split);
    }

    /**
     * Closes the splits still open (each waits up to {@code timeout} for its queued calls, as its
     * own close would), then releases the staging memory, the transports and the store this
     * world created.
     */
    void close(Duration timeout) {
        RuntimeException failure = null;
        try {
            for (IssueOrder split : openSplits) {
                split.close(timeout);
            }
            openSplits.clear();
            engine.lock().lock();
            try {
                engine.close();
            } finally {
                engine.lock().unlock();
            }
        } catch (RuntimeException e) {
            failure = e;
        }
        // each of these also when an earlier step failed: the transport may serve a new world,
        // and what this world created must not outlive it
        release(transport);
        failure = closeAfter(failure, ownsLocal ? localTransport : null);
        failure = closeAfter(failure, ownsTransport ? transport : null);
        failure = closeAfter(failure, ownsStore ? store : null);
        if (failure != null) {
            throw failure;
        }
    }

    /** Closes {@code r} (unless null); returns the first failure, a later one suppressed in it. */
    private static RuntimeException closeAfter(RuntimeException first, AutoCloseable r) {
        if (r == null) {
            return first;
        }
        try {
            r.close();
            return first;
        } catch (Exception e) {
            RuntimeException next = e instanceof RuntimeException re ? re : new IllegalStateException(e);
            if (first == null) {
                return next;
            }
            first.addSuppressed(next);
            return first;
        }
    }
}
