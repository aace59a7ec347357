package io.rdma4j.bench.check;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/** What p2p-perf's check catches: nothing arrived, the wrong sender, a short or shifted message. */
class BytePatternTest {
    private static final long BYTES = 3L * BytePattern.TILE + 17; // whole tiles and a partial one

    private static MemorySegment filled(BytePattern p, long bytes) {
        MemorySegment m = MemorySegment.ofArray(new byte[(int) BYTES]);
        p.fill(m, bytes);
        return m;
    }

    @Test
    void whatWasSentPasses() {
        BytePattern p = new BytePattern(1);
        assertEquals(-1, p.firstDifference(filled(p, BYTES), BYTES));
        assertEquals(-1, p.firstDifference(filled(p, 5), 5));
    }

    @Test
    void anotherRanksBytesDifferAtEveryOffset() {
        MemorySegment fromRank0 = filled(new BytePattern(0), BYTES);
        MemorySegment fromRank1 = filled(new BytePattern(1), BYTES);
        for (long i = 0; i < BYTES; i++) {
            assertNotEquals(fromRank0.get(JAVA_BYTE, i), fromRank1.get(JAVA_BYTE, i), "byte " + i);
        }
        assertEquals(0, new BytePattern(1).firstDifference(fromRank0, BYTES));
    }

    @Test
    void aShortMessageIsCaughtWhereItEnds() {
        BytePattern p = new BytePattern(0);
        MemorySegment got = filled(p, BYTES - 100); // the rest stayed zero
        assertEquals(BYTES - 100, p.firstDifference(got, BYTES));
    }

    @Test
    void aChangedByteInALaterTileIsFound() {
        BytePattern p = new BytePattern(0);
        MemorySegment got = filled(p, BYTES);
        long at = 2L * BytePattern.TILE + 5;
        got.set(JAVA_BYTE, at, (byte) ~got.get(JAVA_BYTE, at));
        assertEquals(at, p.firstDifference(got, BYTES));
    }

    @Test
    void aMessageShiftedByOneIsCaught() {
        BytePattern p = new BytePattern(0);
        MemorySegment sent = filled(p, BYTES);
        MemorySegment got = MemorySegment.ofArray(new byte[(int) BYTES]);
        MemorySegment.copy(sent, 0, got, 1, BYTES - 1);
        got.set(JAVA_BYTE, 0, sent.get(JAVA_BYTE, 0)); // the first byte right: the shift shows from the second
        assertEquals(1, p.firstDifference(got, BYTES));
    }
}
