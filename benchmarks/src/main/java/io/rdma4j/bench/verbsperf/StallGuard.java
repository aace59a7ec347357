package io.rdma4j.bench.verbsperf;

/**
 * Bounds the busy-wait loops of the tests without reading the clock on every empty poll
 * (a clock read can cost a microsecond in a VM): the clock is read once per {@value #CHECK_EVERY}
 * idle spins, and a wait that makes no progress for the limit fails naming what it waited for.
 */
final class StallGuard {
    static final int CHECK_EVERY = 1 << 16;

    private final long limitNanos;
    private final String peer;
    private int spins;
    private long idleSince;

    StallGuard(long limitNanos, String peer) {
        this.limitNanos = limitNanos;
        this.peer = peer;
    }

    void progress() {
        spins = 0;
        idleSince = 0;
    }

    /**
     * Call once per empty poll with a constant {@code waitingFor} (nothing is built per call);
     * throws when there was no progress for the limit.
     */
    void idle(String waitingFor, long done, long total) {
        if ((++spins & (CHECK_EVERY - 1)) != 0) {
            return;
        }
        long now = System.nanoTime();
        if (idleSince == 0) {
            idleSince = now;
        } else if (now - idleSince > limitNanos) {
            throw new IllegalStateException("no progress for " + limitNanos / 1_000_000_000L + " s waiting for "
                    + waitingFor + " (peer " + peer + ", " + done + " of " + total + " done)");
        }
    }
}
