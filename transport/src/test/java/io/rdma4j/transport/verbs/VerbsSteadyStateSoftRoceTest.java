package io.rdma4j.transport.verbs;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.bootstrap.TcpStore;
import io.rdma4j.transport.bootstrap.TcpStoreServer;
import io.rdma4j.transport.testing.LocalGroup;
import io.rdma4j.verbs.testing.SoftRoce;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        assumeTrue(threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled());
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
            RegisteredBuffer a = t0.allocate(1 << 20);
            RegisteredBuffer b = t1.allocate(1 << 20);
            MemorySegment user = arena.allocate(4096);
            RemoteBuffer remoteB = b.remote();
            int warm = 4_000;
            int measured = 1_000;
            for (int i = 0; i < warm; i++) {
                iteration(t0, t1, c0, c1, a, b, remoteB, user, i);
            }
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < measured; i++) {
                iteration(t0, t1, c0, c1, a, b, remoteB, user, i);
            }
            long allocated = threads.getCurrentThreadAllocatedBytes() - before;
            assertTrue(allocated < 1024, allocated + " bytes allocated in " + measured + " steady-state iterations ("
                    + (double) allocated / measured + " B/iteration)");
        }
    }

    private static void iteration(Transport t0, Transport t1, Connection c0, Connection c1, RegisteredBuffer a,
                                  RegisteredBuffer b, RemoteBuffer remoteB, MemorySegment user, int i) {
        RegisteredBuffer u = t0.register(user); // cached: no allocation
        long length = i % 2 == 0 ? 100 : 40_000; // one part, and striped over both QPs
        a.segment().set(ValueLayout.JAVA_INT, 0, i);
        long r = c1.irecv(b, 0, 40_000, 3);
        long s = c0.isend(a, 0, length, 3);
        long sent = Transport.PENDING;
        long received = Transport.PENDING;
        while (sent == Transport.PENDING || received == Transport.PENDING) {
            if (sent == Transport.PENDING) {
                sent = t0.test(s);
            }
            if (received == Transport.PENDING) {
                received = t1.test(r);
            }
        }
        assertEquals(length, received);
        assertEquals(i, b.segment().get(ValueLayout.JAVA_INT, 0));
        long w = c0.write(u, 0, remoteB, 1000, 4096, i & 0xFFFF);
        long rd = c0.read(a, 8192, remoteB, 0, 70_000);
        long written = Transport.PENDING;
        long read = Transport.PENDING;
        long immediate = Connection.NO_IMMEDIATE;
        while (written == Transport.PENDING || read == Transport.PENDING || immediate == Connection.NO_IMMEDIATE) {
            if (written == Transport.PENDING) {
                written = t0.test(w);
            }
            if (read == Transport.PENDING) {
                read = t0.test(rd);
            }
            long polled = c1.pollImmediate(); // also returns rank 1's credits
            if (polled != Connection.NO_IMMEDIATE) {
                immediate = polled;
            }
        }
        assertEquals(i & 0xFFFF, immediate);
        assertEquals(70_000, read);
    }
}
