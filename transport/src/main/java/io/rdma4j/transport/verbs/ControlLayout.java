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
 * creditsIn   (3 + qps) x 8 B   [0] my CTS entries the peer consumed, [1 + q] receives it re-posted on QP q,
 *                               [1 + qps] slots of its eager ring it freed, [2 + qps] user immediates it polled
 * immIn       ringSize x 8 B    user immediates of the peer's one-sided writes, until polled
 * eagerIn     eagerSlots x (16 B header + eagerBytes, 64 B aligned)   the peer's eager messages (header: tag, length)
 * ctsOut, creditsOut, immOut, eagerOut    the same, staged for the peer
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
    final int eagerSlots;
    final int eagerBytes;
    /** Bytes of one eager slot: the header, then the payload, rounded up to a cache line. */
    final long eagerStride;
    final long eagerIn;
    final long eagerOut;
    final long keepalive;
    final long size;

    ControlLayout(int qps, int ctsDepth, int ringSize, int eagerSlots, int eagerBytes) {
        if (qps < 1 || ctsDepth < 1 || ringSize < 1 || eagerSlots < 1 || eagerBytes < 0) {
            throw new IllegalArgumentException("bad control layout: qps=" + qps + " ctsDepth=" + ctsDepth
                    + " ringSize=" + ringSize + " eagerSlots=" + eagerSlots + " eagerBytes=" + eagerBytes);
        }
        this.qps = qps;
        this.ctsDepth = ctsDepth;
        this.ringSize = ringSize;
        this.eagerSlots = eagerSlots;
        this.eagerBytes = eagerBytes;
        this.eagerStride = line(EagerHeader.BYTES + (long) eagerBytes);
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
        eagerIn = at;
        at = line(at + eagerSlots * eagerStride);
        eagerOut = at;
        at = line(at + eagerSlots * eagerStride);
        keepalive = at;
        size = line(at + 64);
    }

    long creditsBytes() {
        return 8L * Credits.counters(qps);
    }

    /** Offset of the slot that eager message {@code index} (0-based) uses, in eagerIn or eagerOut. */
    long eagerSlot(long area, long index) {
        return area + (index % eagerSlots) * eagerStride;
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
