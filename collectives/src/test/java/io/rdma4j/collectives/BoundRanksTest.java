package io.rdma4j.collectives;

import io.rdma4j.nativesupport.internal.OnlineCpus;
import io.rdma4j.transport.TransportTimeoutException;
import io.rdma4j.transport.bootstrap.FileStore;
import io.rdma4j.transport.bootstrap.Store;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Whether a host's ranks are bound to CPUs of their own, from the affinities they publish when a
 * world is built ({@code rdma4j/comm/cpus/<world>/<rank>}): only the ranks of this rank's host
 * count. This JVM's own affinity is rank 0's; the others' are written as their ranks would.
 */
class BoundRanksTest {
    private static final Duration WAIT = Duration.ofSeconds(5);

    private static void publish(Store store, String world, int rank, String cpus) {
        store.set("rdma4j/comm/cpus/" + world + "/" + rank, cpus.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void theRanksOfThisHostAreJudgedByTheirPublishedAffinities(@TempDir Path dir) {
        String mine = OnlineCpus.allowedList();
        assertFalse(mine.isEmpty(), "Linux says which CPUs this process may use");
        FileStore store = new FileStore(dir);
        // ranks 0 and 2 on host a, 1 and 3 on host b
        Topology topo = new Topology(new String[] {"a", "b", "a", "b"});
        publish(store, "w", 0, mine);
        publish(store, "w", 2, mine); // rank 2 shares this process's CPUs
        publish(store, "w", 1, "60000");
        publish(store, "w", 3, "60001");
        assertFalse(Bootstrap.localRanksOnOwnCpus(store, "w", 0, topo, WAIT), "host a's ranks share their CPUs");
        assertTrue(Bootstrap.localRanksOnOwnCpus(store, "w", 1, topo, WAIT), "host b's ranks are bound apart");

        publish(store, "v", 0, mine);
        publish(store, "v", 2, "60000"); // apart from this process's CPUs
        assertTrue(Bootstrap.localRanksOnOwnCpus(store, "v", 0, topo, WAIT)
                || OnlineCpus.count() < 2, "bound apart, where the machine has CPUs for both");
        publish(store, "u", 0, mine);
        publish(store, "u", 2, "");
        assertFalse(Bootstrap.localRanksOnOwnCpus(store, "u", 0, topo, WAIT), "an affinity not known: not apart");
    }

    @Test
    void aRankThatNeverPublishedItsAffinityIsNamed(@TempDir Path dir) {
        FileStore store = new FileStore(dir);
        publish(store, "w", 0, "0");
        TransportTimeoutException e = assertThrows(TransportTimeoutException.class, () -> Bootstrap.localRanksOnOwnCpus(
                store, "w", 0, new Topology(new String[] {"a", "a"}), Duration.ofMillis(200)));
        assertTrue(e.getMessage().contains("rank 1") && e.getMessage().contains("CPU affinity"), e.getMessage());
    }
}
