package io.rdma4j.collectives;

import java.lang.foreign.MemorySegment;

/**
 * The asynchronous calls of one communicator that were issued and have not run yet: a ring of
 * preallocated {@link Request}s, each with the {@link Work} that reports it. Calls are appended
 * under the communicator's issue lock and run, oldest first, by whichever thread holds the
 * engine: the progress thread, a thread awaiting one of them, or a synchronous call that must
 * run after them. That single-consumer-under-a-lock discipline is what keeps execution in issue
 * order. The one consumer without the engine is {@link #failAll}, for a communicator aborted while
 * another holds the engine; the queue's own monitor, held by whoever takes calls out of it, keeps
 * it from overtaking a call still being run.
 */
final class CallQueue {
    private final Request[] requests;
    private final Work[] works;
    private final int mask;
    private final CollectiveCalls calls;
    /** Sequence number of the next call to run; written only by the engine's holder. */
    private volatile long head;
    /** Sequence number the next issued call gets; written only under the issue lock. */
    private volatile long tail;

    /** @param capacity a power of two: how many calls may wait at once */
    CallQueue(int capacity, CollectiveCalls calls) {
        if (Integer.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("queue capacity " + capacity + " is not a power of two");
        }
        this.requests = new Request[capacity];
        this.works = new Work[capacity];
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

    /** Whether the call numbered {@code seq} was taken to run (it may still be running). */
    boolean started(long seq) {
        return head > seq;
    }

    /** Appends a call; the caller holds the issue lock and saw {@link #isFull()} false. */
    void append(Work work, Request.Kind kind, MemorySegment send, MemorySegment recv, long count, DataType type,
                ReduceOp op, int root, Algorithm algorithm) {
        long t = tail;
        int i = (int) (t & mask);
        requests[i].set(kind, send, recv, count, type, op, root, algorithm);
        works[i] = work;
        work.issue(kind, t);
        tail = t + 1;
    }

    /** Runs the queued calls numbered up to {@code seq}, oldest first; the caller holds the engine. */
    void runThrough(long seq) {
        if (head > seq || head == tail) {
            return;
        }
        synchronized (this) {
            while (head <= seq && head != tail) {
                runOldest();
            }
        }
    }

    /** Runs every queued call; the caller holds the engine. */
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
            calls.execute(requests[(int) (head & mask)]);
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
