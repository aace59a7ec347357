package io.rdma4j.transport;

import io.rdma4j.nativesupport.internal.OnlineCpus;

import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class IdleStrategyTest {

    @Test
    void backoffSpinsThenYieldsThenParksLongerUpToTheCapAndResetsOnWork() {
        IdleStrategy.Backoff b = new IdleStrategy.Backoff(3, 2, 1_000, 8_000);
        for (int i = 0; i < 5; i++) {
            assertFalse(b.parking(), "idle " + i + " should still spin or yield");
            b.idle(0);
        }
        assertTrue(b.parking());
        long[] expected = {1_000, 2_000, 4_000, 8_000, 8_000};
        for (long park : expected) {
            assertEquals(park, b.currentParkNanos());
            b.idle(0);
        }
        b.idle(1); // work found
        assertFalse(b.parking());
        assertEquals(1_000, b.currentParkNanos());
    }

    @Test
    void backoffKeepsYieldingForItsYieldTimeBeforeParking() {
        long yieldNanos = 3_000_000;
        IdleStrategy.Backoff b = new IdleStrategy.Backoff(0, 1, yieldNanos, 1_000, 8_000);
        long start = System.nanoTime();
        while (!b.parking()) {
            b.idle(0);
        }
        long elapsed = System.nanoTime() - start;
        assertTrue(elapsed >= yieldNanos, "parked after " + elapsed + " ns of yielding, wanted " + yieldNanos);
        assertEquals(1_000, b.currentParkNanos(), "no park happened during the yield phase");
        b.reset();
        assertFalse(b.parking());
    }

    @Test
    void backoffSpinsForItsSpinTimeBeforeItsFirstYield() {
        long spinNanos = 3_000_000;
        IdleStrategy.Backoff b = new IdleStrategy.Backoff(1, spinNanos, 0, 0, 1_000, 8_000);
        long start = System.nanoTime();
        while (b.spinning()) {
            b.idle(0);
        }
        long elapsed = System.nanoTime() - start;
        assertTrue(elapsed >= spinNanos, "stopped spinning after " + elapsed + " ns, wanted " + spinNanos);
        assertTrue(b.parking(), "no yield phase configured: parks next");
        b.reset();
        assertTrue(b.spinning());
    }

    @Test
    void backoffSpinsLongOnlyWhenEveryPollerOfTheHostHasACoreAndNotAtAllWhenTheyOutnumberTheMachinesCpus() {
        int cores = Runtime.getRuntime().availableProcessors();
        int machine = Math.max(cores, OnlineCpus.count());
        assertTrue(OnlineCpus.count() > 0, "Linux says which CPUs are online");
        IdleStrategy.Backoff dedicated = (IdleStrategy.Backoff) IdleStrategy.Kind.BACKOFF.newInstance(cores);
        IdleStrategy.Backoff outnumbering = (IdleStrategy.Backoff) IdleStrategy.Kind.BACKOFF.newInstance(machine + 1);
        assertFalse(outnumbering.spinning(), "more pollers than the machine's CPUs: the first idle yields");
        assertFalse(outnumbering.parking(), "and yields before it parks");
        for (int i = 0; i < IdleStrategy.Backoff.DEFAULT_SPINS; i++) {
            dedicated.idle(0);
        }
        assertTrue(dedicated.spinning(), "a core each: keeps spinning for its spin time");
        if (machine > cores) { // this process is bound to fewer CPUs than the machine has (taskset)
            IdleStrategy.Backoff bound = (IdleStrategy.Backoff) IdleStrategy.Kind.BACKOFF.newInstance(machine);
            for (int i = 0; i < IdleStrategy.Backoff.DEFAULT_SPINS; i++) {
                assertTrue(bound.spinning(), "oversubscribed for its affinity only: spins first");
                bound.idle(0);
            }
            assertFalse(bound.spinning(), "then yields");
        }
        // More pollers than this process's CPUs: bound apart (each sees its own CPUs only), the
        // dedicated phases, as when unbound pollers fit the cores; not known to be, the
        // oversubscribed ones (on an unbound JVM cores + 1 may outnumber the machine too: then no
        // spins at all, which the known-apart strategy's timed spin phase does not depend on).
        IdleStrategy.Backoff boundApart = (IdleStrategy.Backoff) IdleStrategy.Kind.BACKOFF.newInstance(cores + 1, true);
        IdleStrategy.Backoff boundTogether = (IdleStrategy.Backoff) IdleStrategy.Kind.BACKOFF.newInstance(cores + 1, false);
        for (int i = 0; i < IdleStrategy.Backoff.DEFAULT_SPINS; i++) {
            boundApart.idle(0);
            boundTogether.idle(0);
        }
        assertTrue(boundApart.spinning(), "bound to CPUs of its own: keeps spinning for its spin time");
        assertFalse(boundTogether.spinning(), "sharing its CPUs with the other pollers: yields after the default spins, if any");
        IdleStrategy.Backoff unknown = (IdleStrategy.Backoff) IdleStrategy.Kind.BACKOFF.newInstance();
        for (int i = 0; i < IdleStrategy.Backoff.DEFAULT_SPINS; i++) {
            assertTrue(unknown.spinning(), "unknown sharing: polls the default spins first");
            unknown.idle(0);
        }
        assertFalse(unknown.spinning(), "then yields, as when oversubscribed");
    }

    @Test
    void kindsParseTheirConfigNames() {
        assertInstanceOf(IdleStrategy.BusySpin.class, IdleStrategy.Kind.parse("busy-spin").newInstance());
        assertInstanceOf(IdleStrategy.Yield.class, IdleStrategy.Kind.parse("YIELD").newInstance());
        assertInstanceOf(IdleStrategy.Backoff.class, IdleStrategy.Kind.parse("backoff").newInstance());
        assertThrows(IllegalArgumentException.class, () -> IdleStrategy.Kind.parse("sleep"));
        assertThrows(IllegalArgumentException.class, () -> new IdleStrategy.Backoff(1, 1, 10, 5));
        assertThrows(IllegalArgumentException.class, () -> new IdleStrategy.Backoff(1, 1, -1, 10, 20));
    }

    @Test
    void idlingAllocatesNothing() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        IdleStrategy[] all = {new IdleStrategy.BusySpin(), new IdleStrategy.Yield(), new IdleStrategy.Backoff(10, 10, 1, 1_000)};
        for (int round = 0; round < 2; round++) { // the first round warms up
            long before = threads.getCurrentThreadAllocatedBytes();
            for (IdleStrategy s : all) {
                for (int i = 0; i < 2_000; i++) {
                    s.idle(i % 100 == 0 ? 1 : 0);
                }
            }
            long allocated = threads.getCurrentThreadAllocatedBytes() - before;
            if (round == 1) {
                assertTrue(allocated < 256, allocated + " bytes allocated by idling");
            }
        }
    }

    @Test
    void busySpinningRanksThatOutnumberTheCoresAreWarnedOf() {
        int cores = Runtime.getRuntime().availableProcessors();
        String w = IdleStrategy.Kind.BUSY_SPIN.warning(cores + 2);
        assertNotNull(w);
        assertTrue(w.contains("busy-spin") && w.contains((cores + 2) + " polling processes") && w.contains(cores + " cores"), w);
        assertNull(IdleStrategy.Kind.BUSY_SPIN.warning(cores), "every spinner has a core");
        assertEquals(w, IdleStrategy.Kind.BUSY_SPIN.warning(cores + 2, false));
        assertNull(IdleStrategy.Kind.BUSY_SPIN.warning(cores + 2, true), "bound to CPUs of their own: each has a core");
        assertNull(IdleStrategy.Kind.BACKOFF.warning(cores + 2, false), "the backoff yields when oversubscribed");
        assertNull(IdleStrategy.Kind.YIELD.warning(cores + 2, false));
    }
}
