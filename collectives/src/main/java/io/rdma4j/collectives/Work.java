package io.rdma4j.collectives;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Handle of an asynchronous collective. Works of one communicator complete in the order they
 * were issued. {@link #await(Duration)} rethrows the collective's own exception
 * ({@link CollectiveException} and subclasses).
 *
 * <p>Handles are reused, so that an asynchronous call allocates nothing: once {@code await}
 * has returned or thrown the call's exception, the handle belongs to its communicator again and
 * a later call may return the same object. Do not keep a handle past its {@code await}; awaiting
 * it a second time throws {@link IllegalStateException} while it is not reissued. Threads that
 * await one handle at the same time all see its outcome; it goes back when the last of them
 * returns. A handle whose {@link #future()} was asked for is never reused.
 *
 * <p>A thread that awaits runs the communicator's queued calls itself, up to and including its
 * own, when the progress thread is not running them at that moment: waiting costs no hand-off.
 */
public final class Work {
    private static final int FREE = 0;
    private static final int PENDING = 1;
    private static final int DONE = 2;
    /** Waiting spins this many times, then yields as many, then parks. */
    private static final int SPINS = 200;
    /**
     * Longest park of the {@link #waiter} between checks. Completion unparks it (it publishes
     * itself before it checks the state last, so no wake-up is lost); this only bounds what an
     * unforeseen miss would cost. Long, because every timer wake-up takes the core from whatever
     * runs there, often this communicator's own progress thread (a VM's wake-up cost such a
     * thread 26-30 us: {@code benchmarks/c/sleep_cost.c}).
     */
    private static final long MAX_PARK_NANOS = 100_000_000;
    /** Longest park of a thread that awaits the call while another is the {@link #waiter}: nothing unparks it. */
    private static final long OTHER_WAITER_PARK_NANOS = 1_000_000;
    private static final VarHandle WAITER;

    static {
        try {
            WAITER = MethodHandles.lookup().findVarHandle(Work.class, "waiter", Thread.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final IssueOrder owner;
    private volatile int state = FREE;
    private Request.Kind kind;
    /** Position of the call in its communicator's issue order. */
    private long seq;
    private Throwable failure;
    /** The one parked awaiter that completion unparks (others re-check every {@link #OTHER_WAITER_PARK_NANOS}). */
    private volatile Thread waiter;
    private volatile CompletableFuture<Void> future;
    /** Threads inside {@link #awaitNanos} for the current call (guarded by this handle's lock). */
    private int awaiting;

    Work(IssueOrder owner) {
        this.owner = owner;
    }

    /** Taken for a new call (by the issuing thread, before the call is queued). */
    void issue(Request.Kind kind, long seq) {
        this.kind = kind;
        this.seq = seq;
        this.failure = null;
        this.state = PENDING;
    }

    long seq() {
        return seq;
    }

    /**
     * The call ran: {@code failure} is null if it succeeded. Wakes the waiter. DONE and the
     * future are published and read under this handle's lock, which a waiter takes to recycle
     * it: once DONE is visible the handle may be issued again, and a future asked for then is the
     * next call's, which this completion must not complete.
     */
    void complete(Throwable failure) {
        this.failure = failure;
        CompletableFuture<Void> f;
        synchronized (this) {
            state = DONE;
            f = future;
        }
        Thread w = waiter;
        if (w != null) {
            LockSupport.unpark(w);
        }
        if (f != null) {
            owner.completeLater(f, failure);
        }
    }

    /**
     * A future completed when the collective completes (exceptionally if it failed). A
     * convenience that allocates; the handle is not reused afterwards. Its dependent actions
     * ({@code thenRun} and the like) run on a thread of the communicator's own, in issue order,
     * not on the thread that ran the call, which holds the engine while it completes calls: an
     * action that issues or awaits another call there could wait for that thread forever.
     */
    public CompletableFuture<Void> future() {
        CompletableFuture<Void> f;
        boolean done;
        synchronized (this) {
            f = future;
            if (f == null) {
                f = new CompletableFuture<>();
                future = f;
            }
            done = state == DONE;
        }
        if (done) {
            completeFuture(f, failure);
        }
        return f;
    }

    static void completeFuture(CompletableFuture<Void> f, Throwable t) {
        if (t == null) {
            f.complete(null);
        } else {
            f.completeExceptionally(t);
        }
    }

    /** Whether the collective completed (successfully or not). */
    public boolean isDone() {
        return state != PENDING;
    }

    /** Whether the collective completed without failing (false while it runs). */
    boolean succeeded() {
        return state == DONE && failure == null;
    }

    /**
     * Waits for completion. {@code timeout} bounds the wait for another thread that runs the
     * collective; a call this thread runs itself (see the class description: it does when the
     * progress thread is not running the queue at that moment) ends only when the call does, as
     * a synchronous call would, bounded by the call's own no-progress timeout, which names the
     * rank it waited for. Running it here saves the hand-off to the progress thread that a
     * waiter would otherwise pay on every call.
     *
     * @throws CollectiveTimeoutException if another thread ran it and it did not complete within
     *                                    {@code timeout} (the collective itself keeps running,
     *                                    and the handle stays valid); it names the rank that the
     *                                    running collective waits for, once that one has stalled
     * @throws CollectiveException        if the collective failed; also when an interrupt of the
     *                                    waiting thread ended the wait (its interrupt status stays
     *                                    set): then, as after a timeout, the collective keeps
     *                                    running and the handle stays valid, so {@link #isDone()}
     *                                    says whether its buffers are free
     */
    public void await(Duration timeout) {
        if (!awaitNanos(Math.max(0, TimeUnit.NANOSECONDS.convert(timeout)))) { // saturates, unlike toNanos()
            throw timedOut(kind.apiName, timeout);
        }
    }

    /** The exception for a wait for {@code what} that ran out of {@code timeout}; names the rank the call waits for. */
    CollectiveTimeoutException timedOut(String what, Duration timeout) {
        return owner.waitTimedOut(what + " did not complete within " + timeout.toMillis() + " ms");
    }

    /** Waits without a bound of its own (the collective's no-progress timeout still applies). */
    public void await() {
        awaitNanos(Long.MAX_VALUE);
    }

    /**
     * {@link #await()} that an interrupt does not end (the interrupt is kept for the caller): for
     * whoever frees the call's memory next, which must not happen while the call still runs.
     */
    void awaitUninterruptibly() {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    awaitNanos(Long.MAX_VALUE);
                    return;
                } catch (InterruptedWait e) {
                    interrupted = true;
                    Thread.interrupted();
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * A wait that the waiting thread's interrupt ended, not the call: the call goes on and its
     * handle stays valid (unlike a failure, after which the handle went back to its communicator).
     */
    static final class InterruptedWait extends CollectiveException {
        InterruptedWait(String message) {
            super(-1, message);
        }
    }

    /**
     * {@link #await(Duration)} without a {@code Duration} nor an exception on timeout: returns
     * false if the call is still running after {@code timeoutNanos} (the handle stays valid).
     */
    boolean awaitNanos(long timeoutNanos) {
        synchronized (this) {
            if (state == FREE) {
                throw new IllegalStateException("this Work was awaited already and belongs to its communicator again");
            }
            awaiting++;
        }
        try {
            if (!waitWhilePending(timeoutNanos)) {
                leaveUnfinished();
                return false;
            }
        } catch (InterruptedWait e) {
            leaveUnfinished();
            throw e;
        }
        Throwable t;
        boolean reusable;
        synchronized (this) { // after complete() read the future: see there
            t = failure;
            // the last of several threads awaiting one call hands it back: the others still read its outcome
            reusable = --awaiting == 0 && future == null;
            if (reusable) {
                state = FREE;
                failure = null;
            }
        }
        if (reusable) {
            owner.recycle(this);
        }
        if (t != null) {
            throw rethrow(t);
        }
        return true;
    }

    /**
     * Waits until the call completed (successfully or not) or {@code timeoutNanos} passed, as
     * {@link #awaitNanos} does, but leaves the handle and the outcome to whoever awaits it: for
     * a caller that needs a later call done before it collects the earlier ones (calls complete
     * in issue order). Returns false on timeout.
     *
     * @throws InterruptedWait if the waiting thread was interrupted (its status stays set)
     */
    boolean awaitCompletionNanos(long timeoutNanos) {
        if (state == FREE) {
            throw new IllegalStateException("this Work was awaited already and belongs to its communicator again");
        }
        return waitWhilePending(timeoutNanos);
    }

    /** Runs queued calls or spins, yields and parks while the call is pending; false once {@code timeoutNanos} passed. */
    private boolean waitWhilePending(long timeoutNanos) {
        long start = System.nanoTime();
        int idles = 0;
        while (state == PENDING) {
            if (owner.runQueuedThrough(seq)) {
                idles = 0;
                continue;
            }
            long left = timeoutNanos - (System.nanoTime() - start);
            if (left <= 0) {
                return false;
            }
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                throw new InterruptedWait("interrupted while waiting for " + kind.apiName
                        + " (the call goes on; its handle stays valid)");
            }
            if (idles < SPINS) {
                Thread.onSpinWait();
            } else if (idles < 2 * SPINS) {
                Thread.yield();
            } else {
                Thread me = Thread.currentThread();
                boolean registered = WAITER.compareAndSet(this, null, me);
                if (state == PENDING) {
                    LockSupport.parkNanos(this, Math.min(left, registered ? MAX_PARK_NANOS : OTHER_WAITER_PARK_NANOS));
                }
                if (registered) {
                    waiter = null;
                }
            }
            idles++;
        }
        return true;
    }

    /** How many threads wait for the current call (for tests that need several in the wait). */
    synchronized int awaiters() {
        return awaiting;
    }

    /** A wait that ends before the call did (timeout, interrupt): the handle stays with its caller. */
    private synchronized void leaveUnfinished() {
        awaiting--;
    }

    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e; // as the synchronous call would have thrown it
        }
        return new CollectiveException(-1, String.valueOf(t), t);
    }

    @Override
    public String toString() {
        int s = state;
        return "Work[" + (kind == null ? "unused" : kind.apiName) + (s == PENDING ? ", pending]"
                : s == DONE ? ", done]" : ", awaited]");
    }
}
