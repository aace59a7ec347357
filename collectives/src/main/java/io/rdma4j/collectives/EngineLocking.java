package io.rdma4j.collectives;

import io.rdma4j.collectives.core.CommState;

import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Takes the engine's lock without {@link ReentrantLock#lock()}, which allocates a queue node each
 * time it has to wait. The progress thread and a caller meet at this lock on most asynchronous
 * calls (one runs the queue while the other arrives), so waiting through lock() would put garbage
 * on the hot path. Instead: spin briefly (the holder usually finishes one collective step within
 * microseconds), then yield, then park in growing steps (a holder that runs a long collective
 * should not cost the waiter's core many wake-ups), retrying tryLock in between.
 */
final class EngineLocking {
    private static final int SPINS = 100;
    private static final int YIELDS = 50;
    private static final long FIRST_PARK_NANOS = 20_000;
    private static final long MAX_PARK_NANOS = 200_000;

    private EngineLocking() {
    }

    /**
     * Takes {@code lock} for a call of the communicator whose state is {@code waiter}: once it
     * parks, it gives up with the abort cause when that communicator was aborted. The
     * lock is shared with the world and its other splits, whose stalled collective may hold it
     * for the whole timeout, and an abort of this communicator alone leaves that one running.
     */
    static void lock(ReentrantLock lock, CommState waiter) {
        long park = FIRST_PARK_NANOS;
        for (int round = 0; !lock.tryLock(); round++) {
            if (round < SPINS) {
                Thread.onSpinWait();
            } else if (round < SPINS + YIELDS) {
                Thread.yield();
            } else {
                CollectiveException aborted = waiter.abortCause();
                if (aborted != null) {
                    throw aborted;
                }
                LockSupport.parkNanos(park);
                park = Math.min(2 * park, MAX_PARK_NANOS);
            }
        }
    }
}
