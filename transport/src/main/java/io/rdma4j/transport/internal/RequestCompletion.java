package io.rdma4j.transport.internal;

import io.rdma4j.transport.IdleStrategy;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.TransportTimeoutException;

import java.util.function.Supplier;

/**
 * {@link Transport#test} and {@link Transport#await} for every provider: a test drives the
 * provider's progress on the caller's thread (under the transport's lock, taken per poll so that
 * other threads and {@code abort} are not held up during an await), then reports and releases a
 * finished request. Await idles with the configured strategy between polls and, on timeout
 * (counted from its 64th poll), throws an error naming the operation, its peer and this rank.
 * Allocates nothing per poll.
 */
public final class RequestCompletion {

    /** The provider's side. */
    public interface Progress {
        /** One progress pass over every connection, under the lock; the work done (0 if idle or closed). */
        int progress();

        /** What a pending request waits for, appended to its timeout message ("" if nothing to add). */
        default String waitingFor(int slot) {
            return "";
        }
    }

    private final RequestSlots requests;
    private final Progress progress;
    private final Object lock;
    private final int rank;
    private final ThreadLocal<IdleStrategy> idle;
    private int lastWork;

    /**
     * @param idleStrategies makes each waiting thread's idle strategy: a transport that knows how
     *                       many processes poll on its host passes {@link TransportConfig#newIdleStrategy(int)}
     *                       (with a core each, a wait spins before it yields), one that does not
     *                       {@link TransportConfig#newIdleStrategy()}
     */
    public RequestCompletion(RequestSlots requests, Progress progress, Object lock, int rank,
                             Supplier<IdleStrategy> idleStrategies) {
        this.requests = requests;
        this.progress = progress;
        this.lock = lock;
        this.rank = rank;
        this.idle = ThreadLocal.withInitial(idleStrategies);
    }

    /** The calling thread's idle strategy (each polling thread owns one). */
    public IdleStrategy idleStrategy() {
        return idle.get();
    }

    /** See {@link Transport#test}. */
    public long test(long request) {
        synchronized (lock) {
            return poll(request);
        }
    }

    /** See {@link Transport#await}. */
    public long await(long request, long timeoutNanos) {
        long deadline = 0;
        IdleStrategy idler = idle.get();
        idler.reset();
        for (long polls = 1; ; polls++) {
            long r;
            int work;
            synchronized (lock) {
                r = poll(request);
                work = lastWork;
            }
            if (r != Transport.PENDING) {
                return r;
            }
            // The clock is read on every 64th poll only, first on the 64th, where the timeout starts:
            // read on each poll, it took a third of the CPU of a spinning wait (perf record of
            // p2p-perf -t shm), and most waits end before their 64th poll.
            if ((polls & 63) == 0) {
                long now = System.nanoTime();
                if (polls == 64) {
                    deadline = now + timeoutNanos;
                } else if (now - deadline > 0) {
                    throw timeout(request, timeoutNanos);
                }
            }
            idler.idle(work);
        }
    }

    private long poll(long request) {
        int s = requests.slot(request);
        if (s < 0) {
            throw new IllegalArgumentException("unknown or already completed request id 0x" + Long.toHexString(request));
        }
        lastWork = requests.pending(s) ? progress.progress() : 0;
        int state = requests.state[s];
        if (state == RequestSlots.DONE) {
            long bytes = requests.transferred[s];
            requests.release(s);
            return bytes;
        }
        if (state == RequestSlots.FAILED) {
            TransportException e = requests.error[s];
            requests.release(s);
            // A new exception, so that the waiter's stack is in the trace too.
            throw new TransportException(e.peer(), e.getMessage(), e);
        }
        return Transport.PENDING;
    }

    private TransportTimeoutException timeout(long request, long timeoutNanos) {
        synchronized (lock) {
            int s = requests.slot(request);
            String what = s < 0 ? "request 0x" + Long.toHexString(request) : requests.describe(s) + progress.waitingFor(s);
            return new TransportTimeoutException(s < 0 ? -1 : requests.peer[s], what + " did not complete within "
                    + timeoutNanos / 1_000_000 + " ms (rank " + rank + ")");
        }
    }
}
