package io.rdma4j.collectives.core;

import io.rdma4j.transport.bootstrap.Store;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * A communicator-wide notice board in the bootstrap store, consulted only on the slow path
 * (a collective that has made no progress for a while): a rank that detects a fault (dead
 * peer, mismatching call, abort) posts it, and every rank stalled in the same communicator reads
 * it and fails with the same diagnosis instead of waiting for its own timeout. Stalled ranks
 * also publish "stall registers" (which collective they are in and whom they wait for), so that
 * a rank that times out can follow the chain of waits to the rank that is really missing, and
 * so that calls that mismatch without ever exchanging a descriptor (different peers) are
 * still detected.
 *
 * <p>Registers are store counters (read with {@code add(key, 0)}, which never blocks); a fault
 * is a counter plus one value. Every store failure is swallowed into "board unavailable" for
 * {@link #RETRY_AFTER}, twice as long after each failure in a row up to {@link #MAX_RETRY_AFTER}:
 * the board improves diagnostics but is never required for progress, and a store that is gone
 * or stalled costs a failed call per interval, while one that failed once (a late answer, an
 * interrupted call) serves the board again after it.
 */
public final class FaultBoard {

    public enum FaultKind { RANK_FAILED, MISMATCH, ABORTED, TIMEOUT }

    public record Fault(FaultKind kind, int reporter, int culprit, String message) {
        byte[] encode() {
            return (kind.name() + "|" + reporter + "|" + culprit + "|" + message).getBytes(StandardCharsets.UTF_8);
        }

        static Fault decode(byte[] b) {
            String[] p = new String(b, StandardCharsets.UTF_8).split("\\|", 4);
            return new Fault(FaultKind.valueOf(p[0]), Integer.parseInt(p[1]), Integer.parseInt(p[2]), p[3]);
        }
    }

    /** What a stalled rank last published: collective (sequence + shape) and whom it waits for. */
    public record Stall(long seq, long shape, long count, int waitingFor) {
    }

    /** How long the board stays off after a store call failed. */
    public static final Duration RETRY_AFTER = Duration.ofSeconds(1);
    /** The longest it stays off, after failures in a row. */
    public static final Duration MAX_RETRY_AFTER = Duration.ofSeconds(32);
    private static final String PREFIX = "rdma4j/fb/";
    private final Store store;
    private final long retryAfterNanos;
    private final LongSupplier clock;
    /** How long the next failure turns the board off. */
    private long offFor;
    /** This rank's register values as last written (a failed write forgets them: see {@link #failed}). */
    private final Map<String, Long> mine = new HashMap<>();
    /** When a store call may be tried again after the last failure; 0 when none failed. */
    private volatile long offUntil;
    private volatile boolean off;

    /** @param store the bootstrap store, or null for a board that holds nothing */
    public FaultBoard(Store store) {
        this(store, RETRY_AFTER, System::nanoTime);
    }

    /** @param clock nanoseconds, as {@link System#nanoTime()} */
    FaultBoard(Store store, Duration retryAfter, LongSupplier clock) {
        this.store = store;
        this.retryAfterNanos = retryAfter.toNanos();
        this.offFor = retryAfterNanos;
        this.clock = clock;
    }

    /** Whether the board may be used now: it has a store, and the last failure's interval is over. */
    public boolean available() {
        return store != null && (!off || clock.getAsLong() - offUntil >= 0);
    }

    /**
     * A store call failed: off for the retry interval. A register write may have reached the
     * store before its answer was lost, so the values this rank wrote are read back next time
     * instead of being trusted. (A server that applies the lost write only after that read-back,
     * on the old connection, still leaves the register off by that write until this rank writes
     * it again; the registers only guide the diagnosis.)
     */
    private void failed() {
        mine.clear();
        offUntil = clock.getAsLong() + offFor;
        off = true;
        offFor = Math.min(2 * offFor, MAX_RETRY_AFTER.toNanos());
    }

    /** A store call went through: the next failure starts the intervals over. */
    private void succeeded() {
        if (off) {
            off = false;
            offFor = retryAfterNanos;
        }
    }

    /** Posts a fault for communicator {@code comm}; idempotent enough (only its first fault is read). */
    public synchronized void post(String comm, Fault fault) {
        if (!available()) {
            return;
        }
        try {
            long n = store.add(PREFIX + comm + "/n", 0);
            succeeded();
            if (n > 0) {
                return;
            }
            store.set(PREFIX + comm + "/f", fault.encode());
            store.add(PREFIX + comm + "/n", 1);
        } catch (RuntimeException e) {
            failed();
        }
    }

    /** The fault posted for communicator {@code comm}, or null. */
    public synchronized Fault poll(String comm) {
        if (!available()) {
            return null;
        }
        try {
            long n = store.add(PREFIX + comm + "/n", 0);
            succeeded();
            if (n == 0) {
                return null;
            }
            return Fault.decode(store.get(PREFIX + comm + "/f", Duration.ofSeconds(5)));
        } catch (RuntimeException e) {
            failed();
            return null;
        }
    }

    /** Publishes this rank's stall registers for communicator {@code comm}. */
    public synchronized void reportStall(String comm, int worldRank, Descriptor d, int waitingFor) {
        if (!available()) {
            return;
        }
        try {
            String base = PREFIX + comm + "/stall/" + worldRank + "/";
            setRegister(base + "shape", d.packedShape());
            setRegister(base + "count", d.count);
            setRegister(base + "wait", waitingFor + 1L);
            setRegister(base + "seq", d.seq + 1); // written last: readers trust the others once seq matches
            succeeded();
        } catch (RuntimeException e) {
            failed();
        }
    }

    /** The stall registers of {@code worldRank}, or null if it never reported (or the board is down). */
    public synchronized Stall readStall(String comm, int worldRank) {
        if (!available()) {
            return null;
        }
        try {
            String base = PREFIX + comm + "/stall/" + worldRank + "/";
            long seq = store.add(base + "seq", 0);
            succeeded();
            if (seq == 0) {
                return null;
            }
            return new Stall(seq - 1, store.add(base + "shape", 0), store.add(base + "count", 0),
                    (int) store.add(base + "wait", 0) - 1);
        } catch (RuntimeException e) {
            failed();
            return null;
        }
    }

    private void setRegister(String key, long value) {
        Long cur = mine.get(key);
        long current = cur != null ? cur : store.add(key, 0);
        if (current != value) {
            store.add(key, value - current);
        }
        mine.put(key, value);
    }
}
