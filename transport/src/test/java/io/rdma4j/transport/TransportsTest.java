package io.rdma4j.transport;

import io.rdma4j.transport.bootstrap.FileStore;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.verbs.DiscoveryStatus;
import io.rdma4j.verbs.RdmaDevices;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TransportsTest {
    @TempDir
    Path dir;

    @Test
    void automaticChoiceIsSharedMemoryWhenEveryRankIsOnThisHost() {
        Store store = new FileStore(dir);
        // Rank 1 "published" from this host, without verbs (as Transports would).
        store.set("rdma4j/transport/capability/1", ("noverbs " + Transports.hostIdentity()).getBytes(StandardCharsets.UTF_8));
        assertEquals(TransportConfig.Provider.SHM, Transports.choose(TransportConfig.defaults(), store, 0, 2));
    }

    @Test
    void automaticChoiceIsTcpWhenARankIsOnAnotherHost() {
        Store store = new FileStore(dir);
        store.set("rdma4j/transport/capability/1", "noverbs some-other-host/boot".getBytes(StandardCharsets.UTF_8));
        assertEquals(TransportConfig.Provider.TCP, Transports.choose(TransportConfig.defaults(), store, 0, 2));
        assertTrue(new String(store.get("rdma4j/transport/capability/0", java.time.Duration.ZERO), StandardCharsets.UTF_8)
                .endsWith(Transports.hostIdentity()), "every rank publishes its own host");
    }

    @Test
    void automaticChoiceIsTcpForARankOnThisHostInAnotherPidNamespace() {
        Store store = new FileStore(dir);
        // a container sharing this host's name and kernel but not its pid namespace (Kubernetes
        // hostNetwork pods): the shared-memory provider would refuse the connection
        String mine = Transports.hostIdentity();
        java.util.regex.Matcher ns = java.util.regex.Pattern.compile("/pidns-(\\d+)$").matcher(mine);
        assertTrue(ns.find(), mine);
        String another = mine.substring(0, ns.start()) + "/pidns-" + (Long.parseLong(ns.group(1)) + 1);
        store.set("rdma4j/transport/capability/1", ("noverbs " + another).getBytes(StandardCharsets.UTF_8));
        assertEquals(TransportConfig.Provider.TCP, Transports.choose(TransportConfig.defaults(), store, 0, 2));
    }

    /** A rank that never publishes what it can use: the wait ends at the timeout and names it. */
    @Test
    void theAutomaticChoiceNamesTheRankThatNeverSaidWhatItCanUse() {
        Store store = new FileStore(dir);
        store.set("rdma4j/transport/capability/1", ("noverbs " + Transports.hostIdentity()).getBytes(StandardCharsets.UTF_8));
        TransportConfig config = TransportConfig.builder().timeout(java.time.Duration.ofMillis(300)).build();
        TransportTimeoutException e = assertThrows(TransportTimeoutException.class, () -> Transports.choose(config, store, 0, 3));
        assertEquals(2, e.peer());
        assertTrue(e.getMessage().startsWith("rank 2 did not say which transports it can use within 300 ms"), e.getMessage());
    }

    @Test
    void explicitProvidersAndBadRanks() {
        Store store = new FileStore(dir);
        TransportConfig tcp = TransportConfig.builder().provider(TransportConfig.Provider.TCP).tcpAddress("127.0.0.1").build();
        try (Transport t = Transports.create(tcp, store, 0, 1)) {
            assertEquals("tcp", t.provider());
        }
        TransportConfig verbs = TransportConfig.builder().provider(TransportConfig.Provider.VERBS).build();
        if (RdmaDevices.discover().status() == DiscoveryStatus.DEVICES_FOUND) {
            // e.g. inside the Soft-RoCE guest: an explicit verbs provider is what the group gets
            try (Transport t = Transports.create(verbs, store, 0, 1)) {
                assertEquals("verbs", t.provider());
            }
        } else {
            TransportException e = assertThrows(TransportException.class, () -> Transports.create(verbs, store, 0, 1));
            assertTrue(e.getMessage().contains("verbs"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> Transports.create(tcp, store, 2, 2));
    }
}
