package io.rdma4j.launch;

import io.rdma4j.transport.TransportTimeoutException;
import io.rdma4j.transport.bootstrap.Store;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * What the launchers of a multi-node job tell each other through the job's store: the first
 * rank failure anywhere (so every node stops its ranks at once instead of waiting for a
 * collective to time out), and that a node is done (so node 0, which hosts the store, keeps it
 * up until every node's ranks are gone). Two store clients: a store client serialises its
 * requests, and the watcher's blocking waits must not hold up the reports.
 */
final class JobControl implements AutoCloseable {
    static final String FAILURE_KEY = "rdma4j/launch/failure";
    static final String FAILURE_COUNT_KEY = "rdma4j/launch/failures";
    static final String DONE_KEY = "rdma4j/launch/nodes-done";
    /** How long one watcher wait lasts: bounds how long close() waits for the watcher. */
    private static final Duration POLL = Duration.ofMillis(500);

    private final Store reports;
    private final Store watch;
    private final int nnodes;
    private volatile boolean closing;
    private Thread watcher;

    JobControl(Supplier<Store> connect, int nnodes) {
        this.nnodes = nnodes;
        this.reports = connect.get();
        Store w;
        try {
            w = connect.get();
        } catch (RuntimeException e) {
            reports.close();
            throw e;
        }
        this.watch = w;
    }

    /** Calls {@code onFailure} (once, on a thread of its own) when some node reports a failure. */
    void watchFailures(Consumer<String> onFailure) {
        watcher = Thread.ofPlatform().daemon().name("rdma4j-launch-watch").start(() -> {
            while (!closing) {
                try {
                    byte[] v = watch.get(FAILURE_KEY, POLL);
                    onFailure.accept(new String(v, StandardCharsets.UTF_8));
                    return;
                } catch (TransportTimeoutException notYet) {
                    // no failure so far
                } catch (RuntimeException e) {
                    if (!closing) {
                        onFailure.accept("lost the job's store (node 0's launcher gone?): " + e.getMessage());
                    }
                    return;
                }
            }
        });
    }

    /** Tells the other nodes; only the first failure of the job is kept (it is the cause). */
    void reportFailure(String detail) {
        if (reports.add(FAILURE_COUNT_KEY, 1) == 1) {
            reports.set(FAILURE_KEY, detail.getBytes(StandardCharsets.UTF_8));
        }
    }

    /**
     * Reports this node done and, on node 0, waits (up to {@code timeout}) for every node to be
     * done, so that the store outlives all ranks. Returns the nodes not done in time (0: all).
     */
    int finish(boolean hostsStore, Duration timeout) throws InterruptedException {
        long done = reports.add(DONE_KEY, 1);
        if (!hostsStore) {
            return 0;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        while (done < nnodes && System.nanoTime() - deadline < 0) {
            Thread.sleep(100);
            done = reports.add(DONE_KEY, 0);
        }
        return (int) Math.max(0, nnodes - done);
    }

    @Override
    public void close() {
        closing = true;
        if (watcher != null) {
            try {
                watcher.join(POLL.multipliedBy(4));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        watch.close();
        reports.close();
    }
}
