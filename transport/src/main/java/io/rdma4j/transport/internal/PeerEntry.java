package io.rdma4j.transport.internal;

import io.rdma4j.transport.TransportTimeoutException;
import io.rdma4j.transport.bootstrap.Store;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Waits for what a peer publishes in the store when it starts (its endpoint, its files) as a
 * connection set-up must: in short slices, checking between them whether the transport was
 * aborted or closed (one long blocking get would keep an abort waiting for the whole timeout),
 * and failing, when the peer never published, with a timeout that names the peer.
 */
public final class PeerEntry {
    /** The longest single store wait: how late an abort or close may be noticed. */
    private static final long SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private PeerEntry() {
    }

    /**
     * The value of {@code key}, published by {@code peer}.
     *
     * @param checkUsable throws when the transport may no longer wait (aborted, closed)
     * @param what        what the peer publishes under the key, for the timeout's message
     */
    public static byte[] await(Store store, String key, int peer, Duration timeout, Runnable checkUsable, String what) {
        long start = System.nanoTime();
        long total = TimeUnit.NANOSECONDS.convert(timeout); // saturates
        while (true) {
            checkUsable.run();
            long left = total - (System.nanoTime() - start);
            try {
                return store.get(key, Duration.ofNanos(Math.clamp(left, 1, SLICE_NANOS)));
            } catch (TransportTimeoutException notYet) {
                if (total - (System.nanoTime() - start) <= 0) {
                    throw new TransportTimeoutException(peer, "peer " + peer + " did not publish " + what
                            + " (store key '" + key + "') within " + timeout.toMillis() + " ms: it has not started its"
                            + " transport, or runs with another job id or store");
                }
            }
        }
    }
}
