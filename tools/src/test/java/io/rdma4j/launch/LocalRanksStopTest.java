package io.rdma4j.launch;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(60)
class LocalRanksStopTest {

    /**
     * A second stop (the shutdown hook of a Ctrl-C) while the first one waits out the grace
     * period for a rank that ignores SIGTERM returns only once that rank is gone: returning at
     * once let the JVM halt before the first stop's SIGKILL, leaving the rank behind.
     */
    @Test
    void aStopDuringAStopReturnsOnlyWhenTheRanksAreGone() throws Exception {
        try (LocalRanks ranks = LocalRanks.builder().ranks(1)
                .command(List.of("sh", "-c", "trap '' TERM INT; while :; do sleep 1; done"))
                .environment(r -> Map.of()).output((rank, stderr, line) -> { })
                .gracePeriod(Duration.ofSeconds(2)).start()) {
            ProcessHandle rank = ranks.process(0).toHandle();
            Thread.sleep(300); // the shell has installed its trap
            Thread first = Thread.ofPlatform().start(() -> ranks.stop("a rank failed"));
            Thread.sleep(300); // the first stop sent SIGTERM and waits out the grace period
            assertTrue(rank.isAlive(), "the rank ignores SIGTERM");
            long start = System.nanoTime();
            ranks.stop("interrupted");
            assertFalse(rank.isAlive(), "the second stop returned after "
                    + (System.nanoTime() - start) / 1_000_000 + " ms with the rank still running");
            first.join(10_000);
        }
    }
}
