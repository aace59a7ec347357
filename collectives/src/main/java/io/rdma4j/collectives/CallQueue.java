package io.rdma4j.collectives;

import java.lang.foreign.MemorySegment;
import java.util.function.BooleanSupplier;

/**
 * The asynchronous calls of one communicator that were issued and have not run yet: a ring of
 * preallocated {@link Request}s, each with the {@link Work} that reports it. Calls are appended
 * under the communicator's issue lock and run, oldest first, by whichever thread holds the
 * engine: the progress thread, a thread awaiting one of them, or a synchronous call that must
 * run after them. That single-consumer-under-a-lock discipline is what keeps execution in issue
 * order, across the queues of a world and its splits too ({@link SharedIssueOrder}). The one
 * consumer without the engine is {@link #failAll}, for a communicator aborted while
 * another holds the engine; the queue's own monitor, held by whoever takes calls out of it, keeps
 * it from overtaking a call still being run.
 */
final class CallQueue {
    private final Request[] requests;
    private final Work[] works;
    /** Each queued call's place in the issue order shared with the other queues of the engine. */
    private final long[] tickets;
    private final int mask;
    private final CollectiveCalls calls;
    private final SharedIssueOrder shared;
    /** Sequence number of the next call to run; written only by the engine's holder. */
    private volatile long head;
    /** Sequence number the next issued call gets; written only under the issue lock. */
    private volatile long tail;

    /** @param capacity a power of two: how many calls may wait at once */
    CallQueue(int capacity, CollectiveCalls calls, SharedIssueOrder shared) {
        if (Integer.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("queue capacity " + capacity + " is not a power of two");
        }
        this.requests = new Request[capacity];
        this.works = new Work[capacity];
        this.tickets = new long[capacity];
        this.shared = shared;
        for (int i = 0; i < capacity; i++) {
            requests[i] = new Request();
        }
        this.mask = capacity - 1;
        this.calls = calls;
    }

    boolean isFull() {
        return tail - head == requests.length;
    }

    boolean isEmpty() {
        return head == tail;
    }

    /** The number of the oldest queued call (of the next one issued, if none is queued). */
    long headSeq() {
        return head;
    }

    /** Whether the call numbered {@code seq} was taken to run (it may still be running). */
    boolean started(long seq) {
        return head > seq;
    }

    /**
     * Appends a call; the caller holds the issue lock and saw {@link #isFull()} false.
     *
     * @param inputReady the call's {@link Request#inputReady}, or null
     */
    void append(Work work, Request.Kind kind, MemorySegment send, MemorySegment recv, long count, DataType type,
                ReduceOp op, int root, Algorithm algorithm, BooleanSupplier inputReady) {
        long t = tail;
        int i = (int) (t & mask);
        requests[i].set(kind, send, recv, count, type, op, root, algorithm).inputReady = inputReady;
        works[i] = work;
        tickets[i] = shared.nextTicket();
        work.issue(kind, t);
        tail = t + 1;
    }

    /** The ticket of the oldest queued call, {@link Long#MAX_VALUE} if none is queued. */
    long headTicket() {
        long h = head;
        return h == tail ? Long.MAX_VALUE : tickets[(int) (h & mask)];
    }

    /**
     * Runs the queued calls numbered up to {@code seq}, oldest first, each after the older calls
     * of the queues it shares the engine with; the caller holds the engine.
     */
    void runThrough(long seq) {
        while (head <= seq && head != tail) {
            shared.runOlderThan(headTicket());
            synchronized (this) {
                if (head <= seq && head != tail) {
                    runOldest();
                }
            }
        }
    }

    /** Runs the oldest queued call if its ticket is below {@code ticket}; the caller holds the engine. */
    synchronized void runOldestBefore(long ticket) {
        if (headTicket() < ticket) { // an empty queue's MAX_VALUE is below no ticket
            runOldest();
        }
    }

    /** Runs every queued call (and the older ones of the queues it shares the engine with); the caller holds the engine. */
    void runAll() {
        runThrough(Long.MAX_VALUE);
    }

    /**
     * Completes every queued call with {@code cause}, oldest first, without running it: the
     * caller need not hold the engine (the communicator was aborted, and the engine may stay
     * taken by another communicator's call for its whole timeout).
     */
    synchronized void failAll(Throwable cause) {
        while (head != tail) {
            retireOldest(cause);
        }
    }

    private void runOldest() {
        Throwable failure = null;
        try {
            calls.checkUsable();
            calls.execute(requests[(int) (head & mask)], true);
        } catch (Throwable t) {
            failure = t;
        }
        retireOldest(failure);
    }

    /** Takes the oldest call out of the queue and completes its handle with {@code failure} (null: it succeeded). */
    private void retireOldest(Throwable failure) {
        long h = head;
        int i = (int) (h & mask);
        Work w = works[i];
        requests[i].clear();
        works[i] = null;
        head = h + 1;
        w.complete(failure);
    }
}
