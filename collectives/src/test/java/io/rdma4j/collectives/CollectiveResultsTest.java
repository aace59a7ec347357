package io.rdma4j.collectives;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Results that were wrong once, each against values computed here: heap arrays bound to
 * registered scratch (reduce-scatter's input, all-to-all's own block, in-place reduce-scatter),
 * the two-hop allreduce with several ring channels, and NaN bits that must not depend on the rank.
 */
class CollectiveResultsTest {
    /** reduceScatter copies a heap send array into its registered scratch (it reduced whatever the scratch held). */
    @Test
    void reduceScatterReducesAHeapSendArray() throws Exception {
        Map<Integer, int[]> got = new ConcurrentHashMap<>();
        LocalWorld.tcp(2, Duration.ofSeconds(5), (rank, c) -> {
            int[] send = {1, 2, 3, 4, 5, 6, 7, 8}; // 2 blocks of 4, same on both ranks
            int[] recv = new int[4];
            c.reduceScatter(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), 4, DataType.I32, ReduceOp.SUM);
            got.put(rank, recv);
        });
        assertArrayEquals(new int[] {2, 4, 6, 8}, got.get(0), "rank 0");
        assertArrayEquals(new int[] {10, 12, 14, 16}, got.get(1), "rank 1");
    }

    /** allToAll into a heap receive array keeps this rank's own block (the scratch copied back over it). */
    @Test
    void allToAllIntoAHeapReceiveArrayKeepsTheOwnBlock() throws Exception {
        Map<Integer, int[]> got = new ConcurrentHashMap<>();
        LocalWorld.run(TransportConfig.Provider.SHM, 2, Duration.ofSeconds(5), (rank, c) -> {
            int[] send = {10 * rank, 10 * rank + 1}; // block p (1 element) goes to rank p
            int[] recv = new int[2];
            c.allToAll(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), 1, DataType.I32);
            got.put(rank, recv);
        });
        assertArrayEquals(new int[] {0, 10}, got.get(0), "rank 0");
        assertArrayEquals(new int[] {1, 11}, got.get(1), "rank 1");
    }

    /**
     * In-place reduceScatter on a heap array (recv = this rank's block of send, as documented):
     * rank 1 refused it as a partial overlap after taking the call's sequence number, and rank 0
     * waited for it until the timeout.
     */
    @Test
    void inPlaceReduceScatterOnAHeapArrayRunsOnEveryRank() throws Exception {
        Map<Integer, String> outcome = new ConcurrentHashMap<>();
        LocalWorld.tcp(2, Duration.ofSeconds(5), (rank, c) -> {
            MemorySegment buf = MemorySegment.ofArray(new float[] {1, 2, 3, 4});
            long t0 = System.nanoTime();
            try {
                c.reduceScatter(buf, buf.asSlice(8L * rank, 8), 2, DataType.F32, ReduceOp.SUM);
                outcome.put(rank, "ok " + Arrays.toString(buf.toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT)));
            } catch (RuntimeException e) {
                outcome.put(rank, e.getClass().getSimpleName() + " after " + (System.nanoTime() - t0) / 1_000_000
                        + " ms: " + e.getMessage());
            }
        });
        assertEquals("ok [2.0, 4.0, 3.0, 4.0]", outcome.get(0));
        assertEquals("ok [1.0, 2.0, 6.0, 8.0]", outcome.get(1));
    }

    /**
     * Two hosts of two ranks, two ring channels: the two-hop allreduce's local phases cut one
     * contiguous shard per rank, as its cross-host hop expects (per channel, half the vector kept
     * only its host's sum).
     */
    @Test
    void twoHopWithSeveralChannelsReducesAcrossHosts() throws Exception {
        long count = 1 << 20; // 4 MiB of F32: two channels of 2 MiB
        Map<Integer, String> got = new ConcurrentHashMap<>();
        try (LocalGroup g = LocalGroup.start(4, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(Duration.ofSeconds(120), (rank, t, store) -> {
                try (Communicator c = Communicator.builder().transport(t).store(store).hostId("host" + rank / 2)
                        .options(CollectiveOptions.defaults().withChannels(2).withTimeout(Duration.ofSeconds(30))).build();
                     java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                    MemorySegment x = arena.allocate(4 * count);
                    for (long i = 0; i < count; i++) {
                        x.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, rank + 1);
                    }
                    Algorithm a = c.algorithmFor(4 * count);
                    c.allReduce(x, DataType.F32, ReduceOp.SUM);
                    long wrong = 0, first = -1;
                    for (long i = 0; i < count; i++) {
                        if (x.getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i) != 10f) {
                            wrong++;
                            if (first < 0) {
                                first = i;
                            }
                        }
                    }
                    got.put(rank, a + ": " + wrong + " of " + count + " wrong, first " + first + " = "
                            + (first < 0 ? "-" : x.getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, first)));
                }
            });
        }
                for (String s : got.values()) {
            org.junit.jupiter.api.Assertions.assertTrue(s.contains(" 0 of "), s);
        }
    }

    /** NaNs of different payloads and signs: both partners of a recursive-doubling step fold in the same order. */
    @Test
    void nanResultsAreTheSameBitsOnEveryRank() throws Exception {
        Map<Integer, String> got = new ConcurrentHashMap<>();
        LocalWorld.tcp(2, Duration.ofSeconds(5), (rank, c) -> {
            int[] bits = new int[4];
            Arrays.fill(bits, rank == 0 ? 0x7FC00001 : 0xFFC00000); // quiet NaNs, different payload / sign
            MemorySegment s = MemorySegment.ofArray(bits);
            StringBuilder b = new StringBuilder(c.algorithmFor(16).toString());
            for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MAX}) {
                Arrays.fill(bits, rank == 0 ? 0x7FC00001 : 0xFFC00000);
                c.allReduce(s, s, 4, DataType.F32, op);
                b.append(' ').append(op).append("=0x").append(Integer.toHexString(bits[0]));
            }
            got.put(rank, b.toString());
        });
        assertEquals(got.get(0), got.get(1));
    }
}
