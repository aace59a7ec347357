package io.rdma4j.transport.verbs;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The 16 bytes in front of an eager message's payload in its ring slot: the tag and the
 * length of the isend. It travels in the same write-with-immediate as the payload, so it is
 * visible once the immediate's completion is.
 */
final class EagerHeader {
    static final int BYTES = 16;
    private static final long TAG = 0;
    private static final long LENGTH = 8;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG;

    private EagerHeader() {
    }

    static void write(MemorySegment s, long at, int tag, long length) {
        s.set(INT, at + TAG, tag);
        s.set(LONG, at + LENGTH, length);
    }

    static int tag(MemorySegment s, long at) {
        return s.get(INT, at + TAG);
    }

    static long length(MemorySegment s, long at) {
        return s.get(LONG, at + LENGTH);
    }
}
