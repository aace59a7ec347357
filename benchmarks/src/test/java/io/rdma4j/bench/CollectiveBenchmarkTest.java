package io.rdma4j.bench;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

class CollectiveBenchmarkTest {
    private static final long SMALL_MAX = PerfOptions.JIT_WARMUP_MAX_BYTES;

    @Test
    void largeSizesOnlyAreWarmedUpBehindTheLargestSmallSize() {
        List<Long> large = List.of(512L << 10, 2L << 20);
        assertEquals(List.of(SMALL_MAX, 512L << 10, 2L << 20), CollectiveBenchmark.warmUpSizes(large));
    }

    @Test
    void aRunWithASmallSizeWarmsUpAsRequested() {
        List<Long> mixed = List.of(8L, 512L << 10);
        assertSame(mixed, CollectiveBenchmark.warmUpSizes(mixed));
        List<Long> atTheBound = List.of(SMALL_MAX, 2L << 20);
        assertSame(atTheBound, CollectiveBenchmark.warmUpSizes(atTheBound));
    }
}
