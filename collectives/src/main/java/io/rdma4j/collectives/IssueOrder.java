package io.rdma4j.collectives;

import io.rdma4j.collectives.core.CommState;

import java.lang.foreign.MemorySegment;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * The one path every call of a communicator takes: synchronous calls run on the caller's
 * thread, asynchronous ones on the communicator's worker thread, and all of them execute in the
 * order issued, each holding the engine's lock (which a world shares with its splits, so their
 * collectives over the shared transport run one at a time). A synchronous call first waits for
 * the asynchronous calls issued before it.
 */
final class IssueOrder {
    private final Object issueLock = new Object();
    private final CollectiveCalls calls;
    private final ReentrantLock engineLock;
    private final CommState state;
    private final String workerName;
    private final Request syncRequest = new Request();
    private ExecutorService worker;
    private CompletableFuture<Void> tail = CompletableFuture.completedFuture(null);
    private boolean closed;

    IssueOrder(CollectiveCalls calls, ReentrantLock engineLock, CommState state, String workerName) {
        this.calls = calls;
        this.engineLock = engineLock;
        this.state = state;
        this.workerName = workerName;
    }

    /** Runs a call on this thread, allocating nothing. */
    void run(Request.Kind kind, MemorySegment send, MemorySegment recv,
             long count, DataType type, ReduceOp op, int root, Algorithm algorithm) {
        synchronized (issueLock) {
            enter();
            try {
                calls.execute(syncRequest.set(kind, send, recv, count, type, op, root, algorithm));
            } finally {
                syncRequest.clear();
                engineLock.unlock();
            }
        }
    }

    /** Queues a call for the worker thread; its failure is reported through the returned handle. */
    Work submit(Request.Kind kind, MemorySegment send, MemorySegment recv,
                long count, DataType type, ReduceOp op, int root, Algorithm algorithm) {
        Request r = new Request().set(kind, send, recv, count, type, op, root, algorithm);
        synchronized (issueLock) {
            calls.checkUsable();
            if (worker == null) {
                worker = Executors.newSingleThreadExecutor(task -> {
                    Thread t = new Thread(task, workerName);
                    t.setDaemon(true);
                    return t;
                });
            }
            CompletableFuture<Void> f = tail.handle((v, e) -> null).thenRunAsync(() -> runQueued(r), worker);
            tail = f;
            return new Work(f, kind.apiName);
        }
    }

    private void runQueued(Request r) {
        calls.checkUsable();
        engineLock.lock();
        try {
            calls.execute(r);
        } finally {
            engineLock.unlock();
        }
    }

    /** Runs {@code body} on this thread in issue order, holding the engine (calls that are not collectives). */
    <T> T runExclusive(Supplier<T> body) {
        synchronized (issueLock) {
            enter();
            try {
                return body.get();
            } finally {
                engineLock.unlock();
            }
        }
    }

    /** Start of a synchronous call (under issueLock): after earlier asynchronous work, holding the engine. */
    private void enter() {
        awaitTail();
        calls.checkUsable();
        engineLock.lock();
    }

    private void awaitTail() {
        CompletableFuture<Void> t = tail;
        if (!t.isDone()) {
            try {
                t.join();
            } catch (RuntimeException e) {
                // that work's failure was reported to its own handle; the broken flag carries on
            }
        }
    }

    /**
     * Waits up to {@code timeout} for the issued asynchronous work, then refuses every later call.
     * Returns false if it was closed already.
     */
    boolean close(Duration timeout) {
        synchronized (issueLock) {
            if (closed) {
                return false;
            }
            try {
                tail.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (Exception ignored) {
                // failures were reported through their Work handles
            }
            closed = true;
            state.markClosed();
            if (worker != null) {
                worker.shutdownNow();
            }
            return true;
        }
    }
}
