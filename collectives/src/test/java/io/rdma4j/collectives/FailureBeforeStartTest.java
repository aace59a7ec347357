package io.rdma4j.collectives;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A call that fails on one rank after it took its sequence number, before the collective
 * itself ran (here: heap arrays that partially overlap, refused when they are staged), fails
 * the other ranks at once, naming that rank, instead of leaving them to the timeout.
 */
class FailureBeforeStartTest {

    @Test
    void aRankWhoseCallFailsBeforeItStartsFailsTheOthersNamingItself() throws Exception {
        LocalWorld.tcp(2, Duration.ofSeconds(20), (rank, c) -> {
            float[] a = new float[64];
            long start = System.nanoTime();
            CollectiveException e;
            if (rank == 1) {
                MemorySegment all = MemorySegment.ofArray(a);
                e = assertThrows(CollectiveException.class, () -> c.allReduce(all.asSlice(0, 128),
                        all.asSlice(16, 128), 32, DataType.F32, ReduceOp.SUM, Algorithm.RING));
                assertTrue(e.getMessage().contains("partially overlap"), e.getMessage());
                // broken here too: no later call runs one number ahead of the others
                assertThrows(CollectiveException.class, c::barrier);
            } else {
                e = assertThrows(CollectiveException.class, () -> c.allReduce(MemorySegment.ofArray(a),
                        MemorySegment.ofArray(new float[64]), 32, DataType.F32, ReduceOp.SUM, Algorithm.RING));
                long ms = (System.nanoTime() - start) / 1_000_000;
                assertTrue(ms < 10_000, "rank 0 waited " + ms + " ms: " + e);
            }
            assertEquals(1, e.failedRank(), e.toString());
        });
    }
}
