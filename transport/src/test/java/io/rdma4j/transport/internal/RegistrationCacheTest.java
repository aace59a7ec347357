package io.rdma4j.transport.internal;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

class RegistrationCacheTest {

    @Test
    void findsEveryRegistrationByAddressAndSizeAcrossGrowth() {
        RegistrationCache<String> cache = new RegistrationCache<>();
        for (int i = 0; i < 1000; i++) {
            cache.put(0x10000L * i, 4096 + i, "r" + i);
        }
        assertEquals(1000, cache.size());
        for (int i = 0; i < 1000; i++) {
            assertEquals("r" + i, cache.get(0x10000L * i, 4096 + i));
        }
        assertNull(cache.get(0x10000L, 4096), "same address, other size");
    }

    @Test
    void putReplacesTheRegistrationOfTheSameKey() {
        RegistrationCache<String> cache = new RegistrationCache<>();
        String stale = "stale";
        String fresh = "fresh";
        cache.put(0x5000, 64, stale);
        cache.put(0x5000, 64, fresh);
        assertSame(fresh, cache.get(0x5000, 64));
        assertEquals(1, cache.size());
        cache.clear();
        assertNull(cache.get(0x5000, 64));
    }
}
