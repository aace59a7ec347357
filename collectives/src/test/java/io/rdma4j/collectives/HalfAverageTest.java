package io.rdma4j.collectives;

import io.rdma4j.transport.TransportConfig;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * fp16's average divides each input before the sum (ReduceOp.AVG): inputs whose sum leaves
 * fp16's range (65504) average to a finite value, for each allreduce algorithm that runs on two
 * ranks of one host (ring, tree, RHD; the shared window on shm; two-hop needs several hosts and
 * falls back), reduce-scatter and reduce, in and out of place, from native and heap memory; a
 * send buffer keeps its values.
 * Summed first, 40000 + 40000 was infinity, and so was its half.
 */
class HalfAverageTest {
    private static final Duration AWAIT = Duration.ofSeconds(30);
    private static final ValueLayout.OfShort H = ValueLayout.JAVA_SHORT_UNALIGNED;
    /** 2 x 40000 overflows fp16; their average, and 40000 / 2 summed, are exact. */
    private static final float BIG = 40000f;
    private static final int COUNT = 1000;

    private static void fill(MemorySegment s, long count, float v) {
        for (long i = 0; i < count; i++) {
            s.setAtIndex(H, i, Float.floatToFloat16(v + (i % 4) * 32));
        }
    }

    /** Null if the first {@code count} elements are {@code v} + (i mod 4) x 32, else what differs. */
    private static String differs(MemorySegment s, long count, float v, String what) {
        for (long i = 0; i < count; i++) {
            float got = Float.float16ToFloat(s.getAtIndex(H, i));
            if (got != v + (i % 4) * 32) {
                return what + ": element " + i + " = " + got + ", want " + (v + (i % 4) * 32);
            }
        }
        return null;
    }

    @Test
    void anAverageWhoseSumLeavesTheRangeIsFinite() throws Exception {
        for (TransportConfig.Provider provider : new TransportConfig.Provider[] {TransportConfig.Provider.SHM,
                TransportConfig.Provider.TCP}) {
            List<String> wrong = java.util.Collections.synchronizedList(new ArrayList<>());
            LocalWorld.run(provider, 2, AWAIT, (rank, c) -> {
                try (Arena arena = Arena.ofConfined()) {
                    for (Algorithm a : Algorithm.values()) {
                        String where = provider + " " + a + " rank " + rank;
                        MemorySegment send = arena.allocate(2L * COUNT, 2);
                        MemorySegment recv = arena.allocate(2L * COUNT, 2);
                        fill(send, COUNT, BIG);
                        c.allReduce(send, recv, COUNT, DataType.F16, ReduceOp.AVG, a);
                        wrong.add(differs(recv, COUNT, BIG, where + " out of place"));
                        wrong.add(differs(send, COUNT, BIG, where + " send buffer after the call"));
                        c.allReduce(send, send, COUNT, DataType.F16, ReduceOp.AVG, a);
                        wrong.add(differs(send, COUNT, BIG, where + " in place"));
                        short[] heap = new short[COUNT];
                        MemorySegment h = MemorySegment.ofArray(heap);
                        fill(h, COUNT, BIG);
                        c.allReduce(h, h, COUNT, DataType.F16, ReduceOp.AVG, a);
                        wrong.add(differs(h, COUNT, BIG, where + " heap in place"));
                    }
                    // reduce-scatter: each rank's block of the whole, out of place and in place
                    MemorySegment all = arena.allocate(4L * COUNT, 2);
                    MemorySegment mine = arena.allocate(2L * COUNT, 2);
                    fill(all, 2L * COUNT, BIG);
                    c.reduceScatter(all, mine, COUNT, DataType.F16, ReduceOp.AVG);
                    wrong.add(differs(mine, COUNT, BIG, provider + " reduceScatter rank " + rank));
                    wrong.add(differs(all, 2L * COUNT, BIG, provider + " reduceScatter send buffer rank " + rank));
                    MemorySegment block = all.asSlice(2L * COUNT * rank, 2L * COUNT);
                    c.reduceScatter(all, block, COUNT, DataType.F16, ReduceOp.AVG);
                    wrong.add(differs(block, COUNT, BIG, provider + " reduceScatter in place rank " + rank));
                    // reduce to rank 1: the root's result, the other rank's send untouched
                    fill(mine, COUNT, BIG);
                    MemorySegment out = arena.allocate(2L * COUNT, 2);
                    c.reduce(mine, out, COUNT, DataType.F16, ReduceOp.AVG, 1);
                    wrong.add(rank == 1 ? differs(out, COUNT, BIG, provider + " reduce at the root")
                            : differs(mine, COUNT, BIG, provider + " reduce's send buffer at rank 0"));
                    // heap arguments: divided in their registered copies, the caller's arrays kept
                    MemorySegment heapAll = MemorySegment.ofArray(new short[2 * COUNT]);
                    MemorySegment heapMine = MemorySegment.ofArray(new short[COUNT]);
                    MemorySegment heapOut = MemorySegment.ofArray(new short[COUNT]);
                    fill(heapAll, 2L * COUNT, BIG);
                    c.reduceScatter(heapAll, heapMine, COUNT, DataType.F16, ReduceOp.AVG);
                    wrong.add(differs(heapMine, COUNT, BIG, provider + " heap reduceScatter rank " + rank));
                    wrong.add(differs(heapAll, 2L * COUNT, BIG, provider + " heap reduceScatter send rank " + rank));
                    c.allReduce(heapMine, heapOut, COUNT, DataType.F16, ReduceOp.AVG);
                    wrong.add(differs(heapOut, COUNT, BIG, provider + " heap allreduce out of place rank " + rank));
                    wrong.add(differs(heapMine, COUNT, BIG, provider + " heap allreduce send rank " + rank));
                    c.reduce(heapMine, heapOut, COUNT, DataType.F16, ReduceOp.AVG, 0);
                    wrong.add(rank == 0 ? differs(heapOut, COUNT, BIG, provider + " heap reduce at the root")
                            : differs(heapMine, COUNT, BIG, provider + " heap reduce's send buffer at rank 1"));
                }
            });
            wrong.removeIf(java.util.Objects::isNull);
            assertTrue(wrong.isEmpty(), String.join("\n", wrong));
        }
    }

    /** Three ranks: 1/3 of each input, summed, within the bound ReduceOp.AVG states. */
    @Test
    void aThirdOfEachInputSumsToTheAverage() throws Exception {
        LocalWorld.tcp(3, AWAIT, (rank, c) -> {
            short[] v = new short[COUNT];
            for (int i = 0; i < COUNT; i++) {
                v[i] = Float.floatToFloat16(30000f + rank * 1024 + (i % 7) * 16); // exact; the three sum to 93072..93168
            }
            c.allReduce(MemorySegment.ofArray(v), MemorySegment.ofArray(v), COUNT, DataType.F16, ReduceOp.AVG);
            for (int i = 0; i < COUNT; i++) {
                float want = 31024f + (i % 7) * 16;
                float got = Float.float16ToFloat(v[i]);
                // fp16's ulp at 16384..32768 is 16: three quotients and two partial sums round by 8 at most each
                assertEquals(want, got, 5 * 8f, "element " + i + " on rank " + rank);
            }
        });
    }
}
