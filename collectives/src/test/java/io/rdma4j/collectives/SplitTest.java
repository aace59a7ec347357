package io.rdma4j.collectives;

import io.rdma4j.collectives.core.Group;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * What every rank derives from the gathered split contributions (the allgather itself is
 * simulated here by copying each rank's contribution to all; the multi-process scenarios run it).
 */
class SplitTest {
    private static final long BYTES_PER_RANK = Split.fieldsPerRank() * Long.BYTES;

    /** Each rank's split after an allgather of all contributions. */
    private static Split[] gathered(int[] colors, int[] keys, long[] proposals) {
        int n = colors.length;
        Split[] splits = new Split[n];
        for (int r = 0; r < n; r++) {
            splits[r] = new Split(n, r, colors[r], keys[r], proposals[r]);
        }
        for (int from = 0; from < n; from++) {
            MemorySegment own = splits[from].contributions().asSlice(from * BYTES_PER_RANK, BYTES_PER_RANK);
            for (Split to : splits) {
                to.contributions().asSlice(from * BYTES_PER_RANK, BYTES_PER_RANK).copyFrom(own);
            }
        }
        return splits;
    }

    @Test
    void membersAreOrderedByKeyThenRankAndEachColorGetsItsOwnContext() {
        // parent: 5 ranks that are world ranks 10..14 (a split of a larger world)
        try (LocalGroup lg = LocalGroup.start(5, LocalGroup.config(TransportConfig.Provider.TCP))) {
            int[] colors = {1, 0, 1, -1, 1};
            int[] keys = {5, 0, 5, 0, 2};
            long[] proposals = {2, 4, 3, 2, 2}; // rank 1 already used ids 2 and 3 in another split
            Split[] splits = gathered(colors, keys, proposals);
            int[] transportRanks = {0, 1, 2, 3, 4};
            int[] worldRanks = {10, 11, 12, 13, 14};
            for (int r = 0; r < 5; r++) {
                Group parent = new Group(lg.transport(r), r, transportRanks, worldRanks, 1);
                assertEquals(6, splits[r].contextEnd(), "base 4 (largest proposal) + two colors");
                Group g = splits[r].group(parent);
                if (colors[r] < 0) {
                    assertNull(g);
                    continue;
                }
                if (colors[r] == 0) {
                    assertEquals(4, g.ctx(), "the lowest color takes the base");
                    assertArrayEquals(new int[] {11}, g.worldRanks());
                    assertEquals(0, g.rank());
                } else {
                    assertEquals(5, g.ctx());
                    // key 2 first; rank 0 and 2 tie on key 5 and keep their parent order
                    assertArrayEquals(new int[] {14, 10, 12}, g.worldRanks());
                    assertEquals(switch (r) { case 4 -> 0; case 0 -> 1; default -> 2; }, g.rank());
                }
            }
        }
    }

    @Test
    void contextIdsAreReservedAcrossSplitsAndTheirExhaustionIsRefused() {
        ContextIds ids = new ContextIds();
        assertEquals(ContextIds.FIRST_SPLIT, ids.proposal());
        ids.reserveBelow(7);
        assertEquals(7, ids.proposal());
        ids.reserveBelow(5); // an older agreement never moves it back
        assertEquals(7, ids.proposal());
        ids.reserveBelow(Group.MAX_CTX + 1L);
        CollectiveException e = assertThrows(CollectiveException.class, () -> ids.reserveBelow(Group.MAX_CTX + 2L));
        assertEquals("too many communicators: context ids exhausted (" + Group.MAX_CTX + ")", e.getMessage());
    }
}
