package io.rdma4j.collectives;

import io.rdma4j.collectives.core.CommState;
import io.rdma4j.collectives.core.Engine;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The thread that runs a communicator's asynchronous calls while its caller computes (NCCL's
 * proxy thread plays this part). It parks while the queue is empty; issuing a call unparks it.
 * It parks instead of spinning because it shares the host's cores with the computation it
 * overlaps: a thread that awaits a call runs queued calls itself, so latency does not depend on
 * how fast this one wakes.
 */
final class ProgressThread implements Runnable {
    private final CallQueue queue;
    private final ReentrantLock engineLock;
    private final CommState state;
    private final Thread thread;
    private volatile boolean stopping;

    /** @param state the communicator's: once it is aborted, its queued calls fail without waiting for the engine */
    ProgressThread(CallQueue queue, ReentrantLock engineLock, CommState state, String name) {
        this.queue = queue;
        this.engineLock = engineLock;
        this.state = state;
        this.thread = new Engine.Background(this, name);
        thread.setDaemon(true);
        thread.start();
    }

    /** A call was queued. */
    void wake() {
        LockSupport.unpark(thread);
    }

    /** Ends the thread once the queue is empty (calls still queued fail on the closed communicator). */
    void stop() {
        stopping = true;
        LockSupport.unpark(thread);
    }

    /**
     * Refuses a buffer this thread could not access (memory of a confined arena): the call would
     * fail here, after the other ranks began it, or succeed only when its issuer happened to run it.
     */
    void checkAccessible(String what, MemorySegment buffer) {
        if (buffer != null && !buffer.isAccessibleBy(thread)) {
            throw new IllegalArgumentException("the " + what + " buffer of an asynchronous call is confined to "
                    + "another thread, and asynchronous calls run on the communicator's progress thread: allocate it "
                    + "from a shared, global or automatic arena");
        }
    }

    long threadId() {
        return thread.threadId();
    }

    @Override
    public void run() {
        while (true) {
            if (!queue.isEmpty()) {
                try {
                    EngineLocking.lock(engineLock, state);
                } catch (CollectiveException aborted) {
                    queue.failAll(aborted);
                    continue;
                }
                try {
                    queue.runAll();
                } finally {
                    engineLock.unlock();
                }
            } else if (stopping) {
                return;
            } else {
                // an issue between the check and the park leaves its unpark permit: no lost wake-up
                LockSupport.park(this);
            }
        }
    }
}
