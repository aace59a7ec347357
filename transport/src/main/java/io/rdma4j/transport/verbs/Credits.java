package io.rdma4j.transport.verbs;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Flow control of one connection, in both directions, as monotonically growing counters (so a
 * report that arrives late or twice is harmless):
 * <ul>
 * <li>CTS window: this side writes CTS entry k into slot {@code k % ctsDepth} of the peer's fifo
 * only after the peer reported that it consumed entry {@code k - ctsDepth}.</li>
 * <li>Immediate credits: every RDMA write-with-immediate consumes one receive work request the
 * peer posted on that QP. The peer posted {@code recvDepth} up front and reports how many it
 * re-posted since, so this side never sends one that finds no receive (no RNR NAK, no retry).</li>
 * </ul>
 * What this side owes the peer (CTS entries consumed, receives re-posted) is reported by an RDMA
 * write of the whole counter block whenever it changed. Not thread-safe.
 */
final class Credits {
    private final int qps;
    private final int recvDepth;
    private final int ctsDepth;
    /** What the peer reported: [0] my CTS entries it consumed, [1 + q] receives it re-posted on QP q. */
    private final long[] peer;
    private final long[] immediatesSent;
    private long ctsSent;
    /** What this side owes, same indexes. */
    private final long[] owed;
    private final long[] reported;

    Credits(int qps, int recvDepth, int ctsDepth) {
        this.qps = qps;
        this.recvDepth = recvDepth;
        this.ctsDepth = ctsDepth;
        peer = new long[1 + qps];
        immediatesSent = new long[qps];
        owed = new long[1 + qps];
        reported = new long[1 + qps];
    }

    // ---- This side's sending.

    /** Takes the peer's report (counters only grow; a stale one changes nothing). */
    void observe(int index, long value) {
        if (value > peer[index]) {
            peer[index] = value;
        }
    }

    /** Reads the peer's report from the counter block its NIC writes. */
    void observe(MemorySegment block, long offset) {
        for (int i = 0; i <= qps; i++) {
            observe(i, CtsEntry.acquire(block, offset + 8L * i));
        }
    }

    boolean ctsWindowOpen() {
        return ctsSent - peer[0] < ctsDepth;
    }

    /** Claims the next CTS sequence index (0-based); the window must be open. */
    long takeCts() {
        if (!ctsWindowOpen()) {
            throw new IllegalStateException("CTS fifo of the peer is full");
        }
        return ctsSent++;
    }

    boolean immediateCredit(int qp) {
        return immediatesSent[qp] - peer[1 + qp] < recvDepth;
    }

    boolean immediateCreditOnEvery() {
        for (int q = 0; q < qps; q++) {
            if (!immediateCredit(q)) {
                return false;
            }
        }
        return true;
    }

    void takeImmediate(int qp) {
        if (!immediateCredit(qp)) {
            throw new IllegalStateException("no receive is posted for another write-with-immediate on QP " + qp);
        }
        immediatesSent[qp]++;
    }

    /** Write-with-immediates on QP {@code qp} the peer has not yet acknowledged by a re-post. */
    long immediatesInFlight(int qp) {
        return immediatesSent[qp] - peer[1 + qp];
    }

    // ---- What this side owes.

    void consumedCts() {
        owed[0]++;
    }

    void reposted(int qp, int count) {
        owed[1 + qp] += count;
    }

    boolean reportDue() {
        for (int i = 0; i <= qps; i++) {
            if (owed[i] != reported[i]) {
                return true;
            }
        }
        return false;
    }

    /** Writes the counter block into {@code block} at {@code offset} and counts it as reported. */
    void writeReport(MemorySegment block, long offset) {
        for (int i = 0; i <= qps; i++) {
            block.set(ValueLayout.JAVA_LONG, offset + 8L * i, owed[i]);
            reported[i] = owed[i];
        }
    }
}
