package io.rdma4j.transport.internal;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

    /** A release that fails (a deregistration, say) keeps its entry and loses none of the others. */
    @Test
    void aSweepWhoseTestThrowsKeepsThatEntryAndSweepsTheRest() {
        RegistrationCache<String> cache = new RegistrationCache<>();
        for (int i = 0; i < 100; i++) {
            cache.put(0x10000L * i, 4096, "r" + i);
        }
        IllegalStateException thrown = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                () -> cache.removeIf(r -> {
                    if (r.equals("r7") || r.equals("r50")) {
                        throw new IllegalStateException("ibv_dereg_mr failed for " + r);
                    }
                    return Integer.parseInt(r.substring(1)) % 2 == 0;
                }));
        assertEquals(1, thrown.getSuppressed().length, "the second failure travels with the first");
        assertEquals(51, cache.size(), "the 50 odd entries (r7 among them) and r50 stay");
        for (int i = 0; i < 100; i++) {
            String r = cache.get(0x10000L * i, 4096);
            if (i % 2 == 1 || i == 50) {
                assertEquals("r" + i, r);
            } else {
                assertNull(r, "r" + i + " was swept");
            }
        }
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

    @Test
    void aBoundedCacheForgetsEverythingRatherThanGrowPastItsBound() {
        RegistrationCache<String> cache = new RegistrationCache<>(100);
        for (int i = 0; i < 1000; i++) {
            cache.put(0x7000, 8 + i, "r" + i); // one buffer sliced at ever new sizes
            assertTrue(cache.size() <= 100, "entries: " + cache.size());
            assertEquals("r" + i, cache.get(0x7000, 8 + i), "the newest is always found");
        }
        assertEquals(1000 % 100 == 0 ? 100 : 1000 % 100, cache.size());
        assertNull(cache.get(0x7000, 8), "the oldest was forgotten");
        cache.put(0x7000, 8 + 999, "again"); // replacing an entry does not count as one more
        assertSame("again", cache.get(0x7000, 8 + 999));
    }

    @Test
    void removeIfDropsExactlyTheEntriesItAcceptsAndKeepsTheRestFindable() {
        RegistrationCache<String> cache = new RegistrationCache<>();
        for (int i = 0; i < 300; i++) {
            cache.put(0x1000L * i, 64, "r" + i);
        }
        List<String> asked = new ArrayList<>();
        int removed = cache.removeIf(r -> {
            asked.add(r);
            return Integer.parseInt(r.substring(1)) % 3 == 0;
        });
        assertEquals(100, removed);
        assertEquals(300, asked.size(), "each entry is offered once");
        assertEquals(200, cache.size());
        for (int i = 0; i < 300; i++) {
            assertEquals(i % 3 == 0 ? null : "r" + i, cache.get(0x1000L * i, 64));
        }
    }

    @Test
    void forEachVisitsEveryEntryOnceAndRepeatedSweepsKeepTheRest() {
        RegistrationCache<String> cache = new RegistrationCache<>();
        for (int i = 0; i < 100; i++) {
            cache.put(0x2000L * i, 4096, "r" + i);
        }
        for (int sweep = 1; sweep <= 3; sweep++) { // the scratch tables are reused from the second sweep on
            int s = sweep;
            cache.removeIf(r -> Integer.parseInt(r.substring(1)) % 10 == s);
        }
        List<String> seen = new ArrayList<>();
        cache.forEach(seen::add);
        assertEquals(70, seen.size());
        assertEquals(70, new java.util.HashSet<>(seen).size(), "each entry once");
        for (int i = 0; i < 100; i++) {
            int digit = i % 10;
            assertEquals(digit >= 1 && digit <= 3 ? null : "r" + i, cache.get(0x2000L * i, 4096));
        }
    }
}
