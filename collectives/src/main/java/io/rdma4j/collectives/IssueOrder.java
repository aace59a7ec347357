package io.rdma4j.collectives;

import io.rdma4j.collectives.core.CommState;
import io.rdma4j.collectives.core.Engine;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * The one path every call of a communicator takes. A synchronous call runs on the caller's
 * thread; an asynchronous one is written into the preallocated {@link CallQueue} and run by the
 * {@link ProgressThread} or by a thread that awaits it. All of them execute in the order issued,
 * each holding the engine's lock (which a world shares with its splits, so their collectives over
 * the shared transport run one at a time): a synchronous call first runs the asynchronous calls
 * issued before it. Neither path allocates once warm: the queue's requests and the {@link Work}
 * handles are reused.
 */
final class IssueOrder {
    /** How many asynchronous calls may wait at once; one more makes its issuer run the oldest. */
    static final int QUEUE_CAPACITY = 64;

    private final Object issueLock = new Object();
    private final CollectiveCalls calls;
    private final Engine engine;
    private final ReentrantLock engineLock;
    private final CommState state;
    private final String progressName;
    private final Request syncRequest = new Request();
    private final CallQueue queue;
    /** Awaited handles, ready for reuse (guarded by itself). */
    private final Work[] freeWorks = new Work[QUEUE_CAPACITY];
    private int freeCount;
    private ProgressThread progress;
    private boolean closed;

    IssueOrder(CollectiveCalls calls, Engine engine, CommState state, String progressName) {
        this.calls = calls;
        this.engine = engine;
        this.engineLock = engine.lock();
        this.state = state;
        this.progressName = progressName;
        this.queue = new CallQueue(QUEUE_CAPACITY, calls);
    }

    /** A wait for one of this order's calls ran out of its own bound while another thread drives them. */
    CollectiveTimeoutException waitTimedOut(String what) {
        return engine.waiterTimedOut(what);
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

    /** Queues a call for the progress thread; its failure is reported through the returned handle. */
    Work submit(Request.Kind kind, MemorySegment send, MemorySegment recv,
                long count, DataType type, ReduceOp op, int root, Algorithm algorithm) {
        synchronized (issueLock) {
            calls.checkUsable();
            while (queue.isFull()) {
                // back-pressure: help run the queue rather than let it grow without bound
                if (!runQueuedThrough(Long.MAX_VALUE)) {
                    Thread.yield();
                }
            }
            if (progress == null) {
                progress = new ProgressThread(queue, engineLock, state, progressName);
            }
            progress.checkAccessible("send", send);
            progress.checkAccessible("receive", recv);
            Work w = takeWork();
            queue.append(w, kind, send, recv, count, type, op, root, algorithm);
            progress.wake();
            return w;
        }
    }

    /**
     * Runs the queued calls up to the one numbered {@code seq} on this thread if nobody else is
     * running them (an awaiting thread drives progress itself). Returns whether it ran any.
     */
    boolean runQueuedThrough(long seq) {
        if (queue.started(seq) || queue.isEmpty() || !engineLock.tryLock()) {
            return false;
        }
        try {
            boolean any = !queue.isEmpty() && !queue.started(seq);
            queue.runThrough(seq);
            return any;
        } finally {
            engineLock.unlock();
        }
    }

    private Work takeWork() {
        synchronized (freeWorks) {
            if (freeCount > 0) {
                Work w = freeWorks[--freeCount];
                freeWorks[freeCount] = null;
                return w;
            }
        }
        return new Work(this);
    }

    /** An awaited handle comes back; beyond what the pool holds it is left to the collector. */
    void recycle(Work w) {
        synchronized (freeWorks) {
            if (freeCount < freeWorks.length) {
                freeWorks[freeCount++] = w;
            }
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

    /** Start of a synchronous call (under issueLock): holding the engine, after earlier asynchronous calls. */
    private void enter() {
        EngineLocking.lock(engineLock, state);
        try {
            queue.runAll();
            calls.checkUsable();
        } catch (RuntimeException e) {
            engineLock.unlock();
            throw e;
        }
    }

    /**
     * Waits up to {@code timeout} for the queued asynchronous calls, then refuses every later
     * call; calls still queued then fail as closed. Returns false if it was closed already.
     */
    boolean close(Duration timeout) {
        synchronized (issueLock) {
            if (closed) {
                return false;
            }
            long deadline = System.nanoTime() + timeout.toNanos();
            while (!queue.isEmpty() && System.nanoTime() - deadline < 0) {
                if (!runQueuedThrough(Long.MAX_VALUE)) {
                    LockSupport.parkNanos(100_000);
                }
            }
            closed = true;
            state.markClosed();
            if (progress != null) {
                progress.stop();
            }
            return true;
        }
    }

    /** The progress thread's id, -1 before the first asynchronous call (for allocation tests). */
    long progressThreadId() {
        synchronized (issueLock) {
            return progress == null ? -1 : progress.threadId();
        }
    }
}
