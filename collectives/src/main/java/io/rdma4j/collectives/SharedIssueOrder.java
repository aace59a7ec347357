package io.rdma4j.collectives;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The order in which a world and its splits run their asynchronous calls. They share one engine
 * and run one call at a time to completion, each communicator from its own queue; if each rank
 * picked among the queues by which thread took the engine first, rank 0 could run a split's call
 * while rank 1 runs the world's, and both would wait for each other until the timeout. So every
 * queued call takes a ticket from one counter when it is issued, and whoever holds the engine
 * runs the older calls of the other queues before one of its own: every rank runs them in the
 * order it issued them, across communicators, as it does within one.
 */
final class SharedIssueOrder {
    private final AtomicLong tickets = new AtomicLong();
    /** Copied on change (a split opened or closed), read on every call without a lock. */
    private volatile CallQueue[] queues = new CallQueue[0];

    /** The ticket of a call being queued now. */
    long nextTicket() {
        return tickets.getAndIncrement();
    }

    /** The ticket the next queued call will get: every call queued so far has a smaller one. */
    long issued() {
        return tickets.get();
    }

    synchronized void add(CallQueue q) {
        CallQueue[] a = Arrays.copyOf(queues, queues.length + 1);
        a[a.length - 1] = q;
        queues = a;
    }

    synchronized void remove(CallQueue q) {
        CallQueue[] a = queues;
        for (int i = 0; i < a.length; i++) {
            if (a[i] == q) {
                CallQueue[] b = new CallQueue[a.length - 1];
                System.arraycopy(a, 0, b, 0, i);
                System.arraycopy(a, i + 1, b, i, a.length - i - 1);
                queues = b;
                return;
            }
        }
    }

    /** Runs every queued call of any queue whose ticket is below {@code ticket}, oldest first; the caller holds the engine. */
    void runOlderThan(long ticket) {
        while (true) {
            CallQueue oldest = null;
            long best = ticket;
            for (CallQueue q : queues) {
                long t = q.headTicket();
                if (t < best) {
                    best = t;
                    oldest = q;
                }
            }
            if (oldest == null) {
                return;
            }
            oldest.runOldestBefore(ticket);
        }
    }
}
