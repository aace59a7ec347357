package io.rdma4j.transport.verbs;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.bootstrap.TcpStore;
import io.rdma4j.transport.bootstrap.TcpStoreServer;
import io.rdma4j.transport.testing.LocalGroup;
import io.rdma4j.transport.testing.SteadyStateWorkload;
import io.rdma4j.verbs.testing.SoftRoce;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Two verbs transports driven from one thread, so every byte they allocate on the operation path
 * is counted; in the veth guest rank 0 sits on rxe0 and rank 1 on rxe1, so the traffic crosses
 * the veth pair (with one device both use it, through rxe's loopback).
 */
@Tag(SoftRoce.TAG)
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class VerbsSteadyStateSoftRoceTest {

    @Test
    void steadyStateOperationsAllocateNothingAcrossTwoDevices() throws Exception {
        List<String> devices = SoftRoce.requireDeviceOrSkip();
        assumeTrue(SteadyStateWorkload.measurable());
        TransportConfig base = LocalGroup.config(TransportConfig.Provider.VERBS).toBuilder().ibQpsPerConnection(2).build();
        TransportConfig config0 = base.toBuilder().ibHca(devices.get(0)).build();
        TransportConfig config1 = base.toBuilder().ibHca(devices.get(devices.size() - 1)).build();
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "t");
             Store s0 = TcpStore.builder().address("127.0.0.1").port(server.port()).token("t").build();
             Store s1 = TcpStore.builder().address("127.0.0.1").port(server.port()).token("t").build();
             VerbsTransport t0 = new VerbsTransport(config0, s0, 0, 2);
             VerbsTransport t1 = new VerbsTransport(config1, s1, 1, 2);
             Arena arena = Arena.ofConfined()) {
            assertTrue(t0.deviceDescription().startsWith(devices.get(0)), t0.deviceDescription());
            assertTrue(t1.deviceDescription().startsWith(devices.get(devices.size() - 1)), t1.deviceDescription());
            CompletableFuture<Connection> other = CompletableFuture.supplyAsync(() -> t1.connection(0));
            Connection c0 = t0.connection(1);
            Connection c1 = other.get(60, TimeUnit.SECONDS);
            SteadyStateWorkload.assertAllocatesNothing(t0, t1, c0, c1, arena, 4_000, 1_000);
        }
    }
}
