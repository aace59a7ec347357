package io.rdma4j.bench;

import io.rdma4j.bench.coll.BenchCollective;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The bandwidth accounting against nccl-tests' PERFORMANCE.md, worked by hand: algbw = S / t,
 * busbw = algbw * 2(n-1)/n (allreduce), (n-1)/n (reduce-scatter, allgather, where S is the
 * total size n x count), 1 (broadcast).
 */
class BandwidthTest {
    private static final double EPS = 1e-12;

    @Test
    void algBwIsBytesPerSecondInGigabytes() {
        assertEquals(1.0, Bandwidth.algBw(1_000_000_000L, 1.0), EPS);
        assertEquals(0.5, Bandwidth.algBw(1_000_000L, 0.002), EPS);
        assertEquals(0.0, Bandwidth.algBw(1000, 0), EPS);
    }

    @Test
    void allReduceBusFactorIsTwoTimesNMinusOneOverN() {
        BenchCollective ar = BenchCollective.named("allreduce");
        assertEquals(1.0, ar.busFactor(2), EPS);
        assertEquals(1.5, ar.busFactor(4), EPS);
        assertEquals(1.75, ar.busFactor(8), EPS);
        assertEquals(0.0, ar.busFactor(1), EPS);
        // 64 MiB of floats in 10 ms on 4 ranks
        long count = ar.count(64L << 20, 4, 4);
        assertEquals(16L << 20, count);
        Measurement m = Measurement.of(0.010, ar.algBytes(count, 4, 4), ar.busFactor(4), 0, 20);
        assertEquals((64L << 20) / 0.010 / 1e9, m.algBw(), EPS);
        assertEquals((64L << 20) / 0.010 / 1e9 * 1.5, m.busBw(), EPS);
        assertEquals(10_000, m.timeUs(), 1e-9);
    }

    @Test
    void reduceScatterAndAllGatherCountPerRankButBandwidthOnTheWhole() {
        for (String name : new String[] {"reducescatter", "allgather"}) {
            BenchCollective c = BenchCollective.named(name);
            assertEquals(0.75, c.busFactor(4), EPS);
            assertEquals(0.5, c.busFactor(2), EPS);
            long count = c.count(1 << 20, 4, 4); // 1 MiB total, 4 ranks, floats
            assertEquals(65536, count);
            assertEquals(1 << 20, c.algBytes(count, 4, 4));
            assertEquals(1 << 20, c.printedBytes(count, 4, 4));
        }
        assertEquals(4 * 65536, BenchCollective.named("reduce_scatter").sendElements(65536, 4));
        assertEquals(65536, BenchCollective.named("reduce_scatter").recvElements(65536, 4));
        assertEquals(65536, BenchCollective.named("all_gather").sendElements(65536, 4));
        assertEquals(4 * 65536, BenchCollective.named("all_gather").recvElements(65536, 4));
    }

    @Test
    void broadcastBusBwEqualsAlgBw() {
        BenchCollective b = BenchCollective.named("broadcast");
        assertEquals(1.0, b.busFactor(2), EPS);
        assertEquals(1.0, b.busFactor(8), EPS);
        assertEquals(1000, b.algBytes(250, 4, 8));
    }

    @Test
    void timeColumnUsesNcclTestsPrecision() {
        assertEquals("  12.35", ResultTable.time(12.345));
        assertEquals("  123.5", ResultTable.time(123.45));
        assertEquals("  12346", ResultTable.time(12345.6));
    }
}
