package io.rdma4j.collectives;

import io.rdma4j.collectives.core.CommState;
import io.rdma4j.collectives.core.Engine;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The one path every call of a communicator takes. A synchronous call runs on the caller's
 * thread; an asynchronous one is written into the preallocated {@link CallQueue} and run by the
 * {@link ProgressThread} or by a thread that awaits it. All of them execute in the order issued,
 * each holding the engine's lock (which a world shares with its splits, so their collectives over
 * the shared transport run one at a time, in the order issued across them: {@link
 * SharedIssueOrder}): a synchronous call first runs the asynchronous calls issued before it.
 * Neither path allocates once warm: the queue's requests and the {@link Work} handles are reused.
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
    private final SharedIssueOrder shared;
    /** Guards the pool of awaited handles. */
    private final Object freeLock = new Object();
    /**
     * Awaited handles, ready for reuse. It grows to the most handles a caller ever had out at once
     * (more than the queue's capacity when a caller awaits late: GradientBucketer's buckets), so
     * that a steady state of that many allocates none.
     */
    private Work[] freeWorks = new Work[QUEUE_CAPACITY];
    private int freeCount;
    private ProgressThread progress;
    /** Completes the futures asked of handles (see {@link Work#future()}); made for the first one. */
    private ExecutorService futureCompleter;
    private boolean closed;

    /** @param shared the issue order of the communicators that share {@code engine} (a world and its splits) */
    IssueOrder(CollectiveCalls calls, Engine engine, SharedIssueOrder shared, CommState state, String progressName) {
        this.calls = calls;
        this.engine = engine;
        this.engineLock = engine.lock();
        this.state = state;
        this.progressName = progressName;
        this.shared = shared;
        this.queue = new CallQueue(QUEUE_CAPACITY, calls, shared);
        shared.add(queue);
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
                calls.execute(syncRequest.set(kind, send, recv, count, type, op, root, algorithm), false);
            } finally {
                syncRequest.clear();
                engineLock.unlock();
            }
        }
    }

    /** Queues a call for the progress thread; its failure is reported through the returned handle. */
    Work submit(Request.Kind kind, MemorySegment send, MemorySegment recv,
                long count, DataType type, ReduceOp op, int root, Algorithm algorithm) {
        return submit(kind, send, recv, count, type, op, root, algorithm, null);
    }

    /** {@link #submit} of a call whose input is complete once {@code inputReady} holds ({@link Request#inputReady}). */
    Work submit(Request.Kind kind, MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op,
                int root, Algorithm algorithm, BooleanSupplier inputReady) {
        synchronized (issueLock) {
            calls.checkUsable();
            calls.check(kind, send, recv, count, type, op, root); // before it waits for room or starts the thread
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
            queue.append(w, kind, send, recv, count, type, op, root, algorithm, inputReady);
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
        synchronized (freeLock) {
            if (freeCount > 0) {
                Work w = freeWorks[--freeCount];
                freeWorks[freeCount] = null;
                return w;
            }
        }
        return new Work(this);
    }

    /** An awaited handle comes back. */
    void recycle(Work w) {
        synchronized (freeLock) {
            if (freeCount == freeWorks.length) {
                freeWorks = java.util.Arrays.copyOf(freeWorks, 2 * freeWorks.length);
            }
            freeWorks[freeCount++] = w;
        }
    }

    /** Completes {@code f} (a call's future) on the thread of its own, in the order of these calls. */
    void completeLater(CompletableFuture<Void> f, Throwable failure) {
        ExecutorService e;
        synchronized (this) {
            if (futureCompleter == null) {
                futureCompleter = Executors.newSingleThreadExecutor(r -> {
                    Thread t = new Thread(r, progressName + "-futures");
                    t.setDaemon(true);
                    return t;
                });
            }
            e = futureCompleter;
        }
        try {
            e.execute(() -> Work.completeFuture(f, failure));
        } catch (RejectedExecutionException closedAlready) {
            Work.completeFuture(f, failure); // after close: no call runs any more, nothing is held
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

    /**
     * Start of a synchronous call (under issueLock): holding the engine, after the asynchronous
     * calls issued before it, of this communicator and of those it shares the engine with.
     */
    private void enter() {
        EngineLocking.lock(engineLock, state);
        try {
            shared.runOlderThan(shared.issued());
            calls.checkUsable();
        } catch (RuntimeException e) {
            engineLock.unlock();
            throw e;
        }
    }

    /**
     * Waits up to {@code timeout} for the queued asynchronous calls, then refuses every later
     * call; calls still queued then fail as closed, without touching their buffers. A call that
     * is running then is waited for (its own no-progress timeout bounds it): once this returns,
     * every handle of this communicator is done and no call uses its buffers. Returns false if it
     * was closed already.
     */
    boolean close(Duration timeout) {
        synchronized (issueLock) {
            if (closed) {
                return false;
            }
            long deadline = System.nanoTime() + timeout.toNanos();
            while (!queue.isEmpty() && System.nanoTime() - deadline < 0) {
                // one call at a time, so that the deadline is looked at between calls
                if (!runQueuedThrough(queue.headSeq())) {
                    LockSupport.parkNanos(100_000);
                }
            }
            closed = true;
            state.markClosed();
            // the calls still queued fail here, so that every handle is done when this returns;
            // failAll takes the queue's monitor, inside which a thread runs this queue's call, so
            // it waits for the one running now (and not for the engine, which a stalled call of the
            // world or another split may hold until its timeout)
            try {
                calls.checkUsable();
            } catch (RuntimeException closedNow) {
                queue.failAll(closedNow);
            }
            shared.remove(queue);
            if (progress != null) {
                progress.stop();
            }
            synchronized (this) {
                if (futureCompleter != null) {
                    futureCompleter.shutdown(); // the completions handed to it still run
                }
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
