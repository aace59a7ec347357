package io.rdma4j.bench.check;

import io.rdma4j.bench.coll.BenchCollective;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TestPatternTest {

    @Test
    void sumIsTheSumOfEveryRanksInput() {
        TestPattern p = new TestPattern(DataType.F32, ReduceOp.SUM);
        for (long i = 0; i < 20; i++) {
            double s = 0;
            for (int r = 0; r < 4; r++) {
                s += p.input(r, i);
            }
            assertEquals(s, p.reduced(4, i));
        }
        // index 0: ranks contribute 1, 2, 1, 2
        assertEquals(6, p.reduced(4, 0));
    }

    @Test
    void resultsDependOnIndexAndOnEveryRank() {
        for (ReduceOp op : ReduceOp.values()) {
            for (int n : new int[] {2, 3, 4, 8}) {
                TestPattern p = new TestPattern(DataType.F32, op);
                boolean varies = false;
                boolean missingRankShows = false;
                for (long i = 0; i < 200; i++) {
                    varies |= p.reduced(n, i) != p.reduced(n, i + 1);
                    missingRankShows |= p.reduced(n, i) != p.reduced(n - 1, i);
                }
                assertTrue(varies, op + " on " + n + " ranks is constant over the index");
                if (op != ReduceOp.MIN && op != ReduceOp.MAX) {
                    assertTrue(missingRankShows, op + " on " + n + " ranks ignores the last rank");
                }
            }
        }
    }

    /** A product without any one rank's contribution, rank 0's included, differs from the full one somewhere. */
    @Test
    void aProductMissingAnyOneRanksContributionShows() {
        for (int n : new int[] {2, 3, 8, 40}) {
            TestPattern p = new TestPattern(DataType.F32, ReduceOp.PROD);
            for (int missing = 0; missing < n; missing++) {
                boolean shows = false;
                for (long i = 0; i < 400 && !shows; i++) {
                    double without = 1;
                    for (int r = 0; r < n; r++) {
                        without *= r == missing ? 1 : p.input(r, i);
                    }
                    shows = without != p.reduced(n, i);
                }
                assertTrue(shows, "a product of " + n + " ranks without rank " + missing + "'s contribution looks right");
            }
        }
    }

    /**
     * For every pair of ranks r != s, some element of the first 200 changes when s's contribution
     * is replaced by r's (a duplicated or swapped block), whatever the operator, up to 40 ranks.
     */
    @Test
    void aContributionReplacedByAnotherRanksShows() {
        for (ReduceOp op : ReduceOp.values()) {
            for (int n : new int[] {2, 3, 5, 8, 17, 40}) {
                TestPattern p = new TestPattern(DataType.F64, op);
                for (int s = 0; s < n; s++) {
                    for (int r = 0; r < n; r++) {
                        if (r != s) {
                            assertTrue(replacementShows(p, n, s, r), op + " on " + n + " ranks: rank " + s
                                    + "'s data replaced by rank " + r + "'s gives the same result");
                        }
                    }
                }
            }
        }
        // and a data-movement pattern tells every rank's block apart
        TestPattern raw = new TestPattern(DataType.I32, null);
        for (int s = 0; s < 40; s++) {
            for (int r = 0; r < s; r++) {
                assertNotEquals(raw.input(r, 0), raw.input(s, 0));
            }
        }
    }

    /** Whether the reduction with rank s contributing rank r's inputs differs from the reference somewhere. */
    private static boolean replacementShows(TestPattern p, int n, int s, int r) {
        for (long i = 0; i < 200; i++) {
            double acc = Double.NaN;
            for (int k = 0; k < n; k++) {
                double v = p.input(k == s ? r : k, i);
                acc = Double.isNaN(acc) ? v : combine(p, acc, v);
            }
            if (p.op() == ReduceOp.AVG) {
                acc /= n;
            }
            if (!p.matches(acc, p.reduced(n, i))) {
                return true;
            }
        }
        return false;
    }

    private static double combine(TestPattern p, double a, double b) {
        return switch (p.op()) {
            case SUM, AVG -> a + b;
            case PROD -> a * b;
            case MIN -> Math.min(a, b);
            case MAX -> Math.max(a, b);
        };
    }

    @Test
    void integerTypesWrapAndTruncateAsDocumented() {
        // u8 product at index 0 of 400 ranks: a 2 from each odd multiple of 5 (bit 0 set,
        // 0 mod 5), forty of them: 2^40 wraps to 0; the sum there, 400 ones plus 200 odd
        // ranks' bits, wraps to 600 mod 256
        assertEquals(0, new TestPattern(DataType.U8, ReduceOp.PROD).reduced(400, 0));
        assertEquals(600 & 0xFF, (long) new TestPattern(DataType.U8, ReduceOp.SUM).reduced(400, 0));
        // avg on integers truncates: index 0 of 3 ranks sums 1 + 2 + 1 = 4 -> 4 / 3 = 1
        assertEquals(1, new TestPattern(DataType.I32, ReduceOp.AVG).reduced(3, 0));
        assertEquals(4.0 / 3, new TestPattern(DataType.F64, ReduceOp.AVG).reduced(3, 0), 1e-15);
        assertEquals((float) (4.0 / 3), new TestPattern(DataType.F32, ReduceOp.AVG).reduced(3, 0));
    }

    @Test
    void bf16AndF16RoundToNearestEven() {
        assertEquals(256, ElementCodec.quantize(DataType.BF16, 257)); // tie -> even mantissa
        assertEquals(260, ElementCodec.quantize(DataType.BF16, 259));
        assertEquals(2048, ElementCodec.quantize(DataType.F16, 2049));
        assertEquals(2052, ElementCodec.quantize(DataType.F16, 2051));
        assertEquals(3, ElementCodec.quantize(DataType.BF16, 3));
    }

    @Test
    void codecRoundTripsEveryType() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(64);
            for (DataType t : DataType.values()) {
                ElementCodec.put(s, t, 3, 97);
                assertEquals(97, ElementCodec.get(s, t, 3), t.name());
                ElementCodec.put(s, t, 2, TestPattern.SENTINEL);
                assertEquals(TestPattern.SENTINEL, ElementCodec.get(s, t, 2), t.name());
                assertEquals(97, ElementCodec.get(s, t, 3), t + ": writing element 2 changed element 3");
            }
            ElementCodec.put(s, DataType.U8, 0, 255);
            assertEquals(255, ElementCodec.get(s, DataType.U8, 0)); // unsigned
        }
    }

    @Test
    void floatToleranceIsTightButIntegersAreExact() {
        TestPattern f = new TestPattern(DataType.F32, ReduceOp.AVG);
        assertTrue(f.matches(1.3333334f, 4.0 / 3));
        assertFalse(f.matches(1.34, 4.0 / 3));
        TestPattern i = new TestPattern(DataType.I32, ReduceOp.SUM);
        assertFalse(i.matches(5, 6));
        assertTrue(i.matches(6, 6));
    }

    /**
     * fp16's average divides first: the rounding of its quotients and partial sums passes, a
     * rank's contribution of 1 missing (1 / ranks) does not, up to 20 ranks.
     */
    @Test
    void halfAverageAllowsTheRoundingOfItsQuotientsButNotAMissingRank() {
        TestPattern h = new TestPattern(DataType.F16, ReduceOp.AVG);
        // 4 ranks: quotients up to 1.5 (half ulp 2^-11 each), partial sums up to 6 (2^-9 each)
        assertTrue(h.matches(3.0 + 4 * 0x1p-11 + 3 * 0x1p-9, 3.0, 4));
        assertFalse(h.matches(3.0 + 4 * 0x1p-11 + 3 * 0x1p-9 + 0x1p-12, 3.0, 4));
        for (int ranks = 2; ranks <= 20; ranks++) {
            assertFalse(h.matches(3.0 - 1.0 / ranks, 3.0, ranks), "one rank's 1 missing of " + ranks);
        }
        assertFalse(new TestPattern(DataType.F32, ReduceOp.AVG).matches(3.0 + 0x1p-9, 3.0, 4), "fp32 as before");
    }

    @Test
    void expectedValuesFollowEachCollectivesLayout() {
        TestPattern sum = new TestPattern(DataType.I32, ReduceOp.SUM);
        TestPattern raw = new TestPattern(DataType.I32, null);
        int n = 4;
        long count = 10;
        // reduce-scatter: rank 2 holds block 2 of the reduction
        assertEquals(sum.reduced(n, 2 * count + 3),
                BenchCollective.named("reducescatter").expected(sum, 2, n, 0, count, 3));
        // allgather: element 3*count+4 comes from rank 3's element 4
        assertEquals(raw.input(3, 4), BenchCollective.named("allgather").expected(raw, 0, n, 0, count, 3 * count + 4));
        // broadcast: the root's data everywhere
        assertEquals(raw.input(1, 5), BenchCollective.named("broadcast").expected(raw, 3, n, 1, count, 5));
        assertNotEquals(raw.input(1, 5), raw.input(3, 5));
        for (int r = 0; r < 100; r++) {
            for (long idx = 0; idx < 100; idx++) {
                assertNotEquals(TestPattern.SENTINEL, raw.input(r, idx));
            }
        }
    }

    /** An output no rank wrote keeps the sentinel, which must then read as wrong: no result up to 40 ranks equals it. */
    @Test
    void noResultUpToFortyRanksEqualsTheSentinel() {
        for (DataType t : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                TestPattern p = new TestPattern(t, op);
                for (int ranks = 1; ranks <= 40; ranks++) {
                    for (long idx = 0; idx < 400; idx++) {
                        assertNotEquals(TestPattern.SENTINEL, p.reduced(ranks, idx), t + " " + op + " " + ranks + " ranks, element " + idx);
                    }
                }
            }
        }
    }
}
