package io.rdma4j.bench.verbsperf;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.ServerSocket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class JitWarmupTest {

    /** Keeps another thread of this JVM busy, as a compiler thread would be. */
    private static final class Burner implements AutoCloseable {
        private final AtomicBoolean run = new AtomicBoolean(true);
        private final Thread thread = Thread.ofPlatform().daemon().start(() -> {
            long x = 0;
            while (run.get()) {
                x += System.nanoTime() % 7;
            }
            if (x == 42) {
                System.out.print("");
            }
        });

        @Override
        public void close() throws InterruptedException {
            run.set(false);
            thread.join();
        }
    }

    private static void sleep(long millis) throws IOException {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            throw new IOException(e);
        }
    }

    @Test
    void aQuietJvmStopsAfterTwoRounds() throws Exception {
        int[] rounds = {0};
        int n = JitWarmup.untilQuiet(() -> {
            rounds[0]++;
            sleep(100);
        }, null, 30);
        assertEquals(n, rounds[0]);
        assertTrue(n >= 2 && n < 30, "rounds: " + n);
    }

    @Test
    void busyOtherThreadsKeepItGoingUpToTheLimit() throws Exception {
        try (Burner ignored = new Burner()) {
            assertEquals(3, JitWarmup.untilQuiet(() -> sleep(100), null, 3));
        }
    }

    @Test
    void aMinimumOfRoundsComesBeforeTheFirstQuietOne() throws Exception {
        int[] round = {0};
        // the agreement decides: busy in rounds 1, 2 and 12 (whatever this JVM's own verdict)
        JitWarmup.Peer busyIn1And2And12 = busy -> {
            int r = ++round[0];
            return r == 1 || r == 2 || r == 12;
        };
        assertEquals(3, JitWarmup.untilQuietTogether(() -> sleep(1), busyIn1And2And12, 200), "the first quiet round");
        round[0] = 0;
        assertEquals(10, JitWarmup.untilQuietTogether(() -> sleep(1), busyIn1And2And12, 10, 200), "quiet at the minimum");
        round[0] = 0;
        assertEquals(13, JitWarmup.untilQuietTogether(() -> sleep(1), busyIn1And2And12, 12, 200),
                "busy at the minimum: until the next quiet round");
        assertEquals(7, JitWarmup.untilQuietTogether(() -> sleep(1), busy -> true, 3, 7), "capped");
    }

    @Test
    void bothSidesOfAPingPongRunTheSameNumberOfRounds() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        int limit = 4;
        CompletableFuture<Integer> busySide = CompletableFuture.supplyAsync(() -> {
            try (OobChannel c = OobChannel.accept(port, 10); Burner ignored = new Burner()) {
                return JitWarmup.untilQuiet(() -> sleep(100), c, limit);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        int quietSideRounds;
        try (OobChannel c = OobChannel.connect("127.0.0.1", port, 10, System.err)) {
            // this side is quiet itself, but the peer's busy reports keep it in step
            quietSideRounds = JitWarmup.untilQuiet(() -> sleep(100), c, limit);
        }
        assertEquals(limit, quietSideRounds);
        assertEquals(limit, busySide.get(30, TimeUnit.SECONDS));
    }

    @Test
    void settleWaitsForOtherThreadsAndGivesUpAtItsLimit() throws Exception {
        assertTrue(JitWarmup.settle(5_000), "an idle JVM settles");
        try (Burner ignored = new Burner()) {
            long t0 = System.nanoTime();
            assertFalse(JitWarmup.settle(700));
            assertTrue(System.nanoTime() - t0 < 3_000_000_000L);
        }
    }
}
