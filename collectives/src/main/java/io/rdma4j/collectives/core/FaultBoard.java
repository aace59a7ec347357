package io.rdma4j.collectives.core;

import io.rdma4j.transport.bootstrap.Store;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

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
 * is a counter plus one value. Every store failure is swallowed into "board unavailable": the
 * board improves diagnostics but is never required for progress.
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

    private static final String PREFIX = "rdma4j/fb/";
    private final Store store;
    private final Map<String, Long> mine = new HashMap<>();
    private volatile boolean unavailable;

    /** @param store the bootstrap store, or null for a board that holds nothing */
    public FaultBoard(Store store) {
        this.store = store;
        this.unavailable = store == null;
    }

    public boolean available() {
        return !unavailable;
    }

    /** Posts a fault for communicator {@code comm}; idempotent enough (only its first fault is read). */
    public synchronized void post(String comm, Fault fault) {
        if (unavailable) {
            return;
        }
        try {
            long n = store.add(PREFIX + comm + "/n", 0);
            if (n > 0) {
                return;
            }
            store.set(PREFIX + comm + "/f", fault.encode());
            store.add(PREFIX + comm + "/n", 1);
        } catch (RuntimeException e) {
            unavailable = true;
        }
    }

    /** The fault posted for communicator {@code comm}, or null. */
    public synchronized Fault poll(String comm) {
        if (unavailable) {
            return null;
        }
        try {
            if (store.add(PREFIX + comm + "/n", 0) == 0) {
                return null;
            }
            return Fault.decode(store.get(PREFIX + comm + "/f", Duration.ofSeconds(5)));
        } catch (RuntimeException e) {
            unavailable = true;
            return null;
        }
    }

    /** Publishes this rank's stall registers for communicator {@code comm}. */
    public synchronized void reportStall(String comm, int worldRank, Descriptor d, int waitingFor) {
        if (unavailable) {
            return;
        }
        try {
            String base = PREFIX + comm + "/stall/" + worldRank + "/";
            setRegister(base + "shape", d.packedShape());
            setRegister(base + "count", d.count);
            setRegister(base + "wait", waitingFor + 1L);
            setRegister(base + "seq", d.seq + 1); // written last: readers trust the others once seq matches
        } catch (RuntimeException e) {
            unavailable = true;
        }
    }

    /** The stall registers of {@code worldRank}, or null if it never reported (or the board is down). */
    public synchronized Stall readStall(String comm, int worldRank) {
        if (unavailable) {
            return null;
        }
        try {
            String base = PREFIX + comm + "/stall/" + worldRank + "/";
            long seq = store.add(base + "seq", 0);
            if (seq == 0) {
                return null;
            }
            return new Stall(seq - 1, store.add(base + "shape", 0), store.add(base + "count", 0),
                    (int) store.add(base + "wait", 0) - 1);
        } catch (RuntimeException e) {
            unavailable = true;
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
