package io.rdma4j.transport.tcp;

import io.rdma4j.nativesupport.internal.LibC;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The TCP provider's congestion control: Reno between ranks of one host by default, the host's
 * default (read from /proc, not through the code under test) when configured so or between hosts.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CongestionControlTest {
    private static final Path HOST_DEFAULT = Path.of("/proc/sys/net/ipv4/tcp_congestion_control");
    private static String hostDefault;

    @BeforeAll
    static void readHostDefault() throws IOException {
        assumeTrue(Files.isReadable(HOST_DEFAULT), "not Linux: no " + HOST_DEFAULT);
        hostDefault = Files.readString(HOST_DEFAULT).trim();
    }

    @Test
    void autoGivesRenoWithinAHostAndLeavesOtherConnectionsAlone() throws Exception {
        InetAddress loopback = InetAddress.getByName("127.0.0.1");
        InetAddress here = InetAddress.getByName("10.1.2.3");
        InetAddress there = InetAddress.getByName("10.1.2.4");
        String auto = TransportConfig.TCP_CONGESTION_AUTO;
        assertEquals("reno", CongestionControl.choose(auto, loopback, loopback));
        assertEquals("reno", CongestionControl.choose(auto, here, here), "a host's own address is within the host");
        assertEquals("reno", CongestionControl.choose(auto, InetAddress.getByName("::1"), InetAddress.getByName("::1")));
        assertNull(CongestionControl.choose(auto, here, there));
        assertNull(CongestionControl.choose(TransportConfig.TCP_CONGESTION_SYSTEM, loopback, loopback));
        assertEquals("cubic", CongestionControl.choose("cubic", here, there), "a named algorithm goes on every connection");
    }

    @Test
    void theDescriptorFoundIsEachEndsOwnSocket() throws Exception {
        try (Pair p = Pair.open()) {
            int a = SocketDescriptor.of(p.client);
            int b = SocketDescriptor.of(p.server);
            assertTrue(a >= 0 && b >= 0, a + " " + b);
            assertNotEquals(a, b, "the two ends of one connection in one process");
            // each descriptor is a socket at the channel's own addresses, peer at the other end's
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment address = arena.allocate(128);
                assertEquals(p.client.getLocalAddress(), SocketDescriptor.decode(address, LibC.getsockname(a, address)));
                assertEquals(p.server.getLocalAddress(), SocketDescriptor.decode(address, LibC.getpeername(a, address)));
            }
        }
        try (SocketChannel unconnected = SocketChannel.open()) {
            assertEquals(SocketDescriptor.NONE, SocketDescriptor.of(unconnected));
        }
    }

    @Test
    void applySetsWhatTheSettingChoosesAndReportsWhatItCouldNot() throws Exception {
        try (Pair p = Pair.open()) {
            assertEquals(hostDefault, CongestionControl.current(p.client));
            assertNull(CongestionControl.apply(p.client, TransportConfig.TCP_CONGESTION_SYSTEM));
            assertEquals(hostDefault, CongestionControl.current(p.client), "system leaves the host's default");
            String why = CongestionControl.apply(p.client, "nosuchcc");
            assertNotNull(why, "an algorithm the kernel lacks is reported");
            assertTrue(why.contains("nosuchcc") && why.contains("errno"), why);
            assertEquals(hostDefault, CongestionControl.current(p.client));
            assertNull(CongestionControl.apply(p.client, TransportConfig.TCP_CONGESTION_AUTO));
            assertNull(CongestionControl.apply(p.server, TransportConfig.TCP_CONGESTION_AUTO));
            assertEquals("reno", CongestionControl.current(p.client));
            assertEquals("reno", CongestionControl.current(p.server));
        }
    }

    @Test
    void theProvidersConnectionsWithinAHostRunReno() throws Exception {
        assertEquals("reno", providerCongestion(LocalGroup.config(TransportConfig.Provider.TCP)));
    }

    @Test
    void systemKeepsTheHostsDefaultOnTheProvidersConnections() throws Exception {
        assertEquals(hostDefault, providerCongestion(LocalGroup.config(TransportConfig.Provider.TCP).toBuilder()
                .tcpCongestion(TransportConfig.TCP_CONGESTION_SYSTEM).build()));
    }

    /** The congestion control on both ends of a two-rank group's connection, which must agree. */
    private static String providerCongestion(TransportConfig config) throws Exception {
        String[] seen = new String[2];
        try (LocalGroup group = LocalGroup.start(2, config)) {
            group.run(Duration.ofSeconds(30), (rank, t, store) -> {
                TcpConnection c = (TcpConnection) t.connection(1 - rank);
                seen[rank] = CongestionControl.current(c.channel());
            });
        }
        assertEquals(seen[0], seen[1]);
        return seen[0];
    }

    /** Both ends of one loopback connection. */
    private record Pair(ServerSocketChannel listener, SocketChannel client, SocketChannel server) implements AutoCloseable {
        static Pair open() throws IOException {
            ServerSocketChannel listener = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
            SocketChannel client = SocketChannel.open(listener.getLocalAddress());
            return new Pair(listener, client, listener.accept());
        }

        @Override
        public void close() throws IOException {
            server.close();
            client.close();
            listener.close();
        }
    }
}
