package io.rdma4j.transport.verbs;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The 80 bytes in front of an eager message's payload in its ring slot: the tag and the length
 * of the isend, then room for one {@link CtsEntry} of the sender's own receives (sequence 0:
 * none), so that a receive's CTS and a send posted together to the same peer travel as one
 * packet. It travels in the same write-with-immediate as the payload, so it is visible once the
 * immediate's completion is.
 */
final class EagerHeader {
    static final int BYTES = 16 + CtsEntry.BYTES;
    /** Offset of the carried CTS entry. */
    static final long CTS = 16;
    private static final long TAG = 0;
    private static final long LENGTH = 8;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG;

    private EagerHeader() {
    }

    /** Writes tag and length, and a carried CTS entry of sequence 0 (none). */
    static void write(MemorySegment s, long at, int tag, long length) {
        s.set(INT, at + TAG, tag);
        s.set(LONG, at + LENGTH, length);
        s.set(LONG, at + CTS + CtsEntry.SEQUENCE, 0L);
    }

    /** The sequence number of the carried CTS entry, 0 if the message carries none. */
    static long ctsSequence(MemorySegment s, long at) {
        return s.get(LONG, at + CTS + CtsEntry.SEQUENCE);
    }

    static int tag(MemorySegment s, long at) {
        return s.get(INT, at + TAG);
    }

    static long length(MemorySegment s, long at) {
        return s.get(LONG, at + LENGTH);
    }
}
