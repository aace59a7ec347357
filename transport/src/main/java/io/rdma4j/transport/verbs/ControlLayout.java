package io.rdma4j.transport.verbs;

/**
 * The registered control region of one connection, identical on both sides (both derive it from
 * the same QP count, fifo depth and ring size, which the connection descriptors must agree on).
 * The "in" areas are what the peer's NIC writes; the "out" areas are this side's staging for what
 * it writes into the peer's "in" areas (a staged word is never changed before the NIC read it:
 * see {@link VerbsConnection}).
 *
 * <pre>
 * ctsIn       ctsDepth x 64 B   CTS entries of the peer's receives (this side sends)
 * creditsIn   (1 + qps) x 8 B   [0] my CTS entries the peer consumed, [1 + q] receives it re-posted on QP q
 * immIn       ringSize x 8 B    user immediates of the peer's one-sided writes
 * ctsOut, creditsOut, immOut    the same, staged for the peer
 * keepalive   64 B              target of zero-length liveness probes
 * </pre>
 */
final class ControlLayout {
    final int qps;
    final int ctsDepth;
    final int ringSize;
    final long ctsIn;
    final long creditsIn;
    final long immIn;
    final long ctsOut;
    final long creditsOut;
    final long immOut;
    final long keepalive;
    final long size;

    ControlLayout(int qps, int ctsDepth, int ringSize) {
        if (qps < 1 || ctsDepth < 1 || ringSize < 1) {
            throw new IllegalArgumentException("bad control layout: qps=" + qps + " ctsDepth=" + ctsDepth
                    + " ringSize=" + ringSize);
        }
        this.qps = qps;
        this.ctsDepth = ctsDepth;
        this.ringSize = ringSize;
        long at = 0;
        ctsIn = at;
        at = line(at + (long) ctsDepth * CtsEntry.BYTES);
        creditsIn = at;
        at = line(at + creditsBytes());
        immIn = at;
        at = line(at + ringSize * 8L);
        ctsOut = at;
        at = line(at + (long) ctsDepth * CtsEntry.BYTES);
        creditsOut = at;
        at = line(at + creditsBytes());
        immOut = at;
        at = line(at + ringSize * 8L);
        keepalive = at;
        size = line(at + 64);
    }

    long creditsBytes() {
        return 8L * (1 + qps);
    }

    /** Offset of the fifo entry that CTS number {@code sequenceIndex} (0-based) uses, in ctsIn or ctsOut. */
    long ctsEntry(long area, long sequenceIndex) {
        return area + (sequenceIndex % ctsDepth) * CtsEntry.BYTES;
    }

    long immSlot(long area, long ringIndex) {
        return area + (ringIndex % ringSize) * 8;
    }

    private static long line(long v) {
        return Striping.alignUp(v, 64);
    }
}
