package io.rdma4j.transport.tcp;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.bootstrap.TcpStore;
import io.rdma4j.transport.bootstrap.TcpStoreServer;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Once warm, send/recv, write with immediate, read and registration lookups allocate nothing on
 * the calling thread. Both ranks are driven from this one thread, so every byte the transport
 * allocates is counted (JMH -prof gc in benchmarks/ measures the same across threads).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpSteadyStateAllocationTest {

    @Test
    void steadyStateOperationsAllocateNothing() throws Exception {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        assumeTrue(threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled());
        TransportConfig config = LocalGroup.config(TransportConfig.Provider.TCP);
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "t");
             Store s0 = TcpStore.builder().address("127.0.0.1").port(server.port()).token("t").build();
             Store s1 = TcpStore.builder().address("127.0.0.1").port(server.port()).token("t").build();
             Transport t0 = new TcpTransport(config, s0, 0, 2);
             Transport t1 = new TcpTransport(config, s1, 1, 2);
             Arena arena = Arena.ofConfined()) {
            Connection c0 = t0.connection(1); // connects without waiting for the accept
            Connection c1 = t1.connection(0);
            RegisteredBuffer a = t0.allocate(1 << 20);
            RegisteredBuffer b = t1.allocate(1 << 20);
            MemorySegment user = arena.allocate(4096);
            RemoteBuffer remoteB = b.remote();
            int warm = 20_000;
            int measured = 5_000;
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
        long length = i % 2 == 0 ? 100 : 40_000; // small (copied) and large (written from memory) payloads
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
            long polled = c1.pollImmediate(); // also serves the read on rank 1
            if (polled != Connection.NO_IMMEDIATE) {
                immediate = polled;
            }
        }
        assertEquals(i & 0xFFFF, immediate);
        assertEquals(70_000, read);
    }
}
