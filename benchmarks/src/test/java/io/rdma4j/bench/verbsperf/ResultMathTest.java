package io.rdma4j.bench.verbsperf;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The report arithmetic against values worked out by hand from perftest's formulas. */
class ResultMathTest {
    private static final double MB = 1 << 20;

    @Test
    void bandwidthAverageRateAndPeak() {
        // 4 writes of 1 MiB, every one signalled; posts at 0,10,20,30 us; completions at 100,200,300,350 us
        long[] posted = {0, 10_000, 20_000, 30_000};
        long[] completed = {100_000, 200_000, 300_000, 350_000};
        BandwidthResult r = BandwidthResult.compute(1 << 20, 4, 1, 1, posted, completed, false);
        double seconds = 350e-6;
        assertEquals(4 / seconds, r.averageMBps(), 1e-6, "4 MiB in 350 us");
        assertEquals(4 / seconds / 1e6, r.msgRateMpps(), 1e-12);
        // best stretch: post 0 .. completion 3 is 350/4 = 87.5 us per message; post 1 .. completion 3
        // is 340/3 = 113; post 3 .. completion 3 is 320; post 0 .. completion 0 is 100
        assertEquals(1 / 87.5e-6, r.peakMBps(), 1e-6);
    }

    @Test
    void peakOnlyLooksAtSignalledCompletionsAndListStarts() {
        // cq moderation 2, post list 2: completions are stamped at indexes 1 and 3, posts at 0 and 2
        long[] posted = {0, -1, 50, -1};
        long[] completed = {-1, 100, -1, 120};
        BandwidthResult r = BandwidthResult.compute(1 << 20, 4, 2, 2, posted, completed, false);
        // candidates: (100-0)/2 = 50, (120-0)/4 = 30, (120-50)/2 = 35 -> 30 ns per message
        assertEquals(1 / 30e-9, r.peakMBps(), 1e-3, "1 MiB per 30 ns");
        assertEquals(4 / 120e-9, r.averageMBps(), 1e-3, "4 MiB from the first post to the last completion");
    }

    @Test
    void noPeakUsesOnlyStartAndEnd() {
        long[] posted = {1_000};
        long[] completed = {1_001_000};
        BandwidthResult r = BandwidthResult.compute(65536, 1000, 1, 1, posted, completed, true);
        assertEquals(0, r.peakMBps());
        assertEquals(1000 * 65536 / MB / 1e-3, r.averageMBps(), 1e-6);
        assertEquals(1.0, r.msgRateMpps(), 1e-9);
    }

    @Test
    void latencyIsHalfTheRoundTripWithTheTwoWorstDropped() {
        int iters = 13; // 12 round trips: 10, 12, ..., 30 us plus two outliers
        long[] posted = new long[iters];
        long[] rtts = {10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 900, 5000};
        for (int i = 1; i < iters; i++) {
            posted[i] = posted[i - 1] + rtts[(i * 7) % 12] * 1000; // out of order on purpose
        }
        LatencyResult r = LatencyResult.compute(64, iters, posted, new long[iters]);
        assertEquals(5.0, r.minUs(), 1e-9);
        // ten samples kept (10..28 us), max is the first dropped one (900 us round trip)
        assertEquals(450.0, r.maxUs(), 1e-9);
        // even count: perftest's median is the mean of the middle two, (18 + 20) / 2 / 2
        assertEquals(9.5, r.typicalUs(), 1e-9);
        assertEquals(9.5, r.averageUs(), 1e-9);
        double var = 0;
        for (int k = 0; k < 10; k++) {
            double d = (10 + 2 * k) / 2.0 - 9.5;
            var += d * d;
        }
        assertEquals(Math.sqrt(var / 10), r.stdevUs(), 1e-9);
        // ceil(10 * 0.99) = 10 and ceil(10 * 0.999) = 10: both percentiles index past the kept samples
        assertEquals(450.0, r.p99Us(), 1e-9);
        assertEquals(450.0, r.p999Us(), 1e-9);
        assertEquals(64, r.size());
        assertEquals(iters, r.iters());
    }

    @Test
    void smallMessagesWalkThroughAPageInCacheLineStrides() {
        assertEquals(64, PerfEndpoint.stride(2), "perftest's INC(): at least a cache line");
        assertEquals(64, PerfEndpoint.stride(64));
        assertEquals(128, PerfEndpoint.stride(65), "rounded up to cache lines");
        assertEquals(2048, PerfEndpoint.stride(2048));
        assertEquals(true, PerfEndpoint.cycles(2048), "up to half the cycle buffer");
        assertEquals(false, PerfEndpoint.cycles(2049));
    }

    @Test
    void resultsTravelAsValues() {
        BandwidthResult r = new BandwidthResult(4096, 2000, 18.5, 17.25, 0.004416);
        assertEquals(r, BandwidthResult.fromValues(r.toValues()));
    }
}
