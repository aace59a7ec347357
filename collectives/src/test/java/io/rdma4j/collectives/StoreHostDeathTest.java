package io.rdma4j.collectives;

import io.rdma4j.transport.testing.RankProcesses;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The rank that hosts the store dies (SIGKILL) while 4 ranks allreduce: with the store, the
 * fault board is gone, and a rank that only waits on a neighbour sees that neighbour close on
 * it. Every survivor must still name rank 0, the first rank lost (the TCP provider's last frame
 * to a peer names it; the verbs provider's liveness socket does), not the neighbour that gave up
 * after it. Over TCP here; over verbs in {@link CollectivesVerbsSoftRoceTest}.
 */
class StoreHostDeathTest {
    @Test
    void survivorsNameTheStoreHostWhenItDies() throws Exception {
        run("tcp", Duration.ofSeconds(90));
    }

    /** Runs the scenario over {@code provider}, allowing {@code start} for the ranks to start allreducing. */
    static void run(String provider, Duration start) throws Exception {
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort();
        }
        try (RankProcesses ranks = RankProcesses.launch(4, StoreHostDeathRank.class,
                MultiProcessHarness.env(provider, MultiProcessHarness.DEFAULT_CHUNKING), Integer.toString(port))) {
            long deadline = System.nanoTime() + start.toNanos();
            for (int r = 0; r < 4; r++) {
                while (!ranks.output(r).contains("READY")) {
                    assertTrue(ranks.process(r).isAlive() && System.nanoTime() < deadline,
                            "rank " + r + " did not start allreducing:\n" + ranks.output(r));
                    Thread.sleep(20);
                }
            }
            ranks.kill(0);
            for (int r = 1; r < 4; r++) {
                Process p = ranks.process(r);
                assertTrue(p.waitFor(60, TimeUnit.SECONDS), "rank " + r + " still runs after rank 0 died:\n" + ranks.output(r));
                String out = ranks.output(r);
                assertEquals(0, p.exitValue(), out);
                assertTrue(out.contains("FAILED naming rank 0:"), "rank " + r + " blamed another rank:\n" + out);
            }
            System.out.println(provider + " rank 3: " + ranks.output(3).lines().filter(l -> l.startsWith("FAILED")).findFirst().orElse(""));
        }
    }
}
