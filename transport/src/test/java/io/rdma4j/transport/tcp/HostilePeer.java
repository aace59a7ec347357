package io.rdma4j.transport.tcp;

import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.bootstrap.TcpStore;
import io.rdma4j.transport.bootstrap.TcpStoreServer;
import io.rdma4j.transport.testing.LocalGroup;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.time.Duration;

/**
 * A TCP transport as rank 1 of 2 (the victim), with a 4 KiB region filled with 0x5A, and a raw
 * socket that can connect to it as rank 0 and send any frame: what a peer that could read the
 * store may do.
 */
final class HostilePeer implements AutoCloseable {
    final TcpStoreServer server;
    final Store store;
    final TcpTransport victim;
    final RegisteredBuffer region;
    SocketChannel attacker;

    HostilePeer() {
        server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "t");
        store = TcpStore.builder().address("127.0.0.1").port(server.port()).token("t").build();
        TransportConfig config = LocalGroup.config(TransportConfig.Provider.TCP).toBuilder().timeout(Duration.ofSeconds(2)).build();
        victim = new TcpTransport(config, store, 1, 2);
        region = victim.allocate(4096);
        region.segment().fill((byte) 0x5A);
    }

    TcpEndpoint endpoint() {
        return TcpEndpoint.fromBytes(1, store.get("rdma4j/tcp/endpoint/1", Duration.ofSeconds(5)));
    }

    /** Connects as rank 0 with the given secret halves. */
    void connectAsRankZero(long secretHigh, long secretLow) throws Exception {
        TcpEndpoint e = endpoint();
        attacker = SocketChannel.open(new InetSocketAddress(e.host(), e.port()));
        send(Frame.HELLO, Frame.VERSION, Frame.MAGIC, 0, secretHigh, secretLow, 0);
    }

    /** One frame: the header's fields, then {@code payloadBytes} bytes of 0xFF. */
    void send(int type, int tag, long a, long b, long c, long d, int payloadBytes) throws Exception {
        ByteBuffer f = ByteBuffer.allocate(Frame.HEADER + payloadBytes).order(ByteOrder.LITTLE_ENDIAN);
        f.putInt(type).putInt(tag).putLong(a).putLong(b).putLong(c).putLong(d);
        while (f.hasRemaining()) {
            f.put((byte) 0xFF);
        }
        f.flip();
        while (f.hasRemaining()) {
            attacker.write(f);
        }
    }

    @Override
    public void close() throws Exception {
        if (attacker != null) {
            attacker.close();
        }
        victim.close();
        store.close();
        server.close();
    }
}
