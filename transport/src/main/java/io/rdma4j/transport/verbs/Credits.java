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
 * <li>Eager slots: eager message k goes into slot {@code k % eagerSlots} of the peer's eager
 * ring only after the peer reported that it freed slot {@code k - eagerSlots} (it frees them in
 * ring order, a slot held by a message no receive has matched yet holding back those after it).</li>
 * <li>User immediates: the value of write-with-immediate k goes into slot {@code k % userRing}
 * of the peer's immediate ring only after the peer's application polled value
 * {@code k - userRing}, so the peer holds at most that many values it has not polled.</li>
 * </ul>
 * What this side owes the peer (CTS entries consumed, receives re-posted, eager slots freed, user
 * immediates polled) is reported by an RDMA write of the whole counter block once a quarter of
 * some window is owed: a report is a packet on the wire, and one per message would double a small
 * message's packets. A quarter keeps three quarters of every window usable meanwhile, and a sender
 * whose window is exhausted has handed the peer enough to owe a report (or, for eager slots,
 * takes the rendezvous path instead), so the threshold never stalls a connection; the user
 * ring's report waits for the peer's application to poll, which is the point of that window.
 * Not thread-safe.
 */
final class Credits {
    private final int qps;
    private final int recvDepth;
    private final int ctsDepth;
    private final int eagerSlots;
    private final int userRing;
    /**
     * What the peer reported: [0] my CTS entries it consumed, [1 + q] receives it re-posted on QP
     * q, [1 + qps] eager slots it freed, [2 + qps] user immediates its application polled.
     */
    private final long[] peer;
    private final long[] immediatesSent;
    private long ctsSent;
    private long eagerSent;
    private long userSent;
    /** What this side owes, same indexes, and the owed amount that makes a report due. */
    private final long[] owed;
    private final long[] reported;
    private final long[] reportAt;

    Credits(int qps, int recvDepth, int ctsDepth, int eagerSlots, int userRing) {
        this.qps = qps;
        this.recvDepth = recvDepth;
        this.ctsDepth = ctsDepth;
        this.eagerSlots = eagerSlots;
        this.userRing = userRing;
        peer = new long[counters(qps)];
        immediatesSent = new long[qps];
        owed = new long[counters(qps)];
        reported = new long[counters(qps)];
        reportAt = new long[counters(qps)];
        reportAt[0] = quarter(ctsDepth);
        java.util.Arrays.fill(reportAt, 1, 1 + qps, quarter(recvDepth));
        reportAt[1 + qps] = quarter(eagerSlots);
        reportAt[2 + qps] = quarter(userRing);
    }

    /** The counters of a report with {@code qps} QPs (its block is 8 bytes each). */
    static int counters(int qps) {
        return 3 + qps;
    }

    private static long quarter(int window) {
        return Math.max(1, window / 4);
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
        for (int i = 0; i < peer.length; i++) {
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

    boolean eagerSlotFree() {
        return eagerSent - peer[1 + qps] < eagerSlots;
    }

    /** Claims the next eager message index (0-based); a slot must be free. */
    long takeEager() {
        if (!eagerSlotFree()) {
            throw new IllegalStateException("eager ring of the peer is full");
        }
        return eagerSent++;
    }

    boolean userRingFree() {
        return userSent - peer[2 + qps] < userRing;
    }

    /** Claims the next user immediate's ring index (0-based); a slot must be free. */
    long takeUserImmediate() {
        if (!userRingFree()) {
            throw new IllegalStateException("immediate ring of the peer is full");
        }
        return userSent++;
    }

    // ---- What this side owes.

    void consumedCts() {
        owed[0]++;
    }

    void reposted(int qp, int count) {
        owed[1 + qp] += count;
    }

    /** The peer's eager slots this side freed, in ring order (a total, not an increment). */
    void eagerFreed(long total) {
        owed[1 + qps] = total;
    }

    /** The application took one of the peer's user immediates, so its slot may be written again. */
    void polledImmediate() {
        owed[2 + qps]++;
    }

    boolean reportDue() {
        for (int i = 0; i < owed.length; i++) {
            if (owed[i] - reported[i] >= reportAt[i]) {
                return true;
            }
        }
        return false;
    }

    /** Writes the counter block into {@code block} at {@code offset} and counts it as reported. */
    void writeReport(MemorySegment block, long offset) {
        for (int i = 0; i < owed.length; i++) {
            block.set(ValueLayout.JAVA_LONG, offset + 8L * i, owed[i]);
            reported[i] = owed[i];
        }
    }
}
