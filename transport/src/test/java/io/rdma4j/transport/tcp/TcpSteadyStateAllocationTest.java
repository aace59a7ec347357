package io.rdma4j.transport.tcp;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.bootstrap.TcpStore;
import io.rdma4j.transport.bootstrap.TcpStoreServer;
import io.rdma4j.transport.testing.LocalGroup;
import io.rdma4j.transport.testing.SteadyStateWorkload;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

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
        assumeTrue(SteadyStateWorkload.measurable());
        assumeTrue(SteadyStateWorkload.selectorAllocates() == null, SteadyStateWorkload.selectorAllocates());
        TransportConfig config = LocalGroup.config(TransportConfig.Provider.TCP);
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "t");
             Store s0 = TcpStore.builder().address("127.0.0.1").port(server.port()).token("t").build();
             Store s1 = TcpStore.builder().address("127.0.0.1").port(server.port()).token("t").build();
             Transport t0 = new TcpTransport(config, s0, 0, 2);
             Transport t1 = new TcpTransport(config, s1, 1, 2);
             Arena arena = Arena.ofConfined()) {
            Connection c0 = t0.connection(1); // connects without waiting for the accept
            Connection c1 = t1.connection(0);
            SteadyStateWorkload.assertAllocatesNothing(t0, t1, c0, c1, arena, 20_000, 5_000);
        }
    }
}
