package io.rdma4j.bench;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class ByteSizesTest {
    @Test
    void parsesBinarySuffixes() {
        assertEquals(8, ByteSizes.parse("8"));
        assertEquals(64 * 1024, ByteSizes.parse("64K"));
        assertEquals(64 * 1024, ByteSizes.parse("64kb"));
        assertEquals(8, ByteSizes.parse("8B"));
        assertEquals(512, ByteSizes.parse("512b"));
        assertEquals(256L * 1024 * 1024, ByteSizes.parse("256M"));
        assertEquals(2L * 1024 * 1024 * 1024, ByteSizes.parse("2G"));
        assertThrows(IllegalArgumentException.class, () -> ByteSizes.parse("12X"));
        assertThrows(IllegalArgumentException.class, () -> ByteSizes.parse("-1"));
        assertThrows(IllegalArgumentException.class, () -> ByteSizes.parse("99999999999G"));
    }

    @Test
    void formatsExactMultiples() {
        assertEquals("64K", ByteSizes.format(65536));
        assertEquals("256M", ByteSizes.format(256L << 20));
        assertEquals("1000", ByteSizes.format(1000));
    }

    @Test
    void geometricSeriesStopsAtTheLastSizeNotAboveMax() {
        // nccl-tests -b 8 -e 1M -f 4: 8 * 4^k up to 512K (2M would pass 1M)
        List<Long> s = ByteSizes.series(8, 1 << 20, 4, 0);
        assertEquals(List.of(8L, 32L, 128L, 512L, 2048L, 8192L, 32768L, 131072L, 524288L), s);
        assertEquals(List.of(1L, 2L, 4L), ByteSizes.series(1, 4, 2, 0));
    }

    @Test
    void linearSeriesAddsTheStep() {
        assertEquals(List.of(10L, 20L, 30L), ByteSizes.series(10, 35, 1, 10));
    }

    @Test
    void rejectsRangesThatCannotProgress() {
        assertThrows(IllegalArgumentException.class, () -> ByteSizes.series(0, 8, 2, 0));
        assertThrows(IllegalArgumentException.class, () -> ByteSizes.series(16, 8, 2, 0));
        assertThrows(IllegalArgumentException.class, () -> ByteSizes.series(8, 16, 1, 0));
    }
}
