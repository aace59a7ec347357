package io.rdma4j.transport.tcp;

import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.bootstrap.TcpStore;
import io.rdma4j.transport.bootstrap.TcpStoreServer;
import io.rdma4j.transport.testing.LocalGroup;

import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A TCP transport as the last rank of a group (the victim; rank 1 of 2 unless told), with a 4 KiB
 * region filled with 0x5A, and raw sockets that can connect to it as any lower rank and send any
 * frame: what a peer that could read the store may do.
 */
final class HostilePeer implements AutoCloseable {
    final TcpStoreServer server;
    final Store store;
    final TcpTransport victim;
    final RegisteredBuffer region;
    private final int victimRank;
    private final List<SocketChannel> sockets = new ArrayList<>();
    /** The socket of {@link #connectAsRankZero}, which {@link #send} writes to. */
    SocketChannel attacker;

    HostilePeer() {
        this(2);
    }

    HostilePeer(int size) {
        server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "t");
        store = TcpStore.builder().address("127.0.0.1").port(server.port()).token("t").build();
        TransportConfig config = LocalGroup.config(TransportConfig.Provider.TCP).toBuilder().timeout(Duration.ofSeconds(2)).build();
        victimRank = size - 1;
        victim = new TcpTransport(config, store, victimRank, size);
        region = victim.allocate(4096);
        region.segment().fill((byte) 0x5A);
    }

    TcpEndpoint endpoint() {
        return TcpEndpoint.fromBytes(victimRank, store.get("rdma4j/tcp/endpoint/" + victimRank, Duration.ofSeconds(5)));
    }

    /** Connects as rank 0 with the given secret halves. */
    void connectAsRankZero(long secretHigh, long secretLow) throws Exception {
        TcpEndpoint e = endpoint();
        attacker = SocketChannel.open(new InetSocketAddress(e.host(), e.port()));
        sockets.add(attacker);
        send(Frame.HELLO, Frame.VERSION, Frame.MAGIC, 0, secretHigh, secretLow, 0);
    }

    /** A socket that passed the handshake as {@code rank} (below the victim's), once the victim took it. */
    SocketChannel connectAs(int rank) throws Exception {
        return connectAs(rank, 0);
    }

    /**
     * The same with a fixed receive buffer of {@code receiveBufferBytes} (0: the kernel's,
     * which grows with what arrives even while nothing reads it).
     */
    SocketChannel connectAs(int rank, int receiveBufferBytes) throws Exception {
        TcpEndpoint e = endpoint();
        SocketChannel ch = SocketChannel.open();
        sockets.add(ch);
        if (receiveBufferBytes > 0) {
            ch.setOption(StandardSocketOptions.SO_RCVBUF, receiveBufferBytes);
        }
        ch.connect(new InetSocketAddress(e.host(), e.port()));
        send(ch, Frame.HELLO, Frame.VERSION, Frame.MAGIC, rank, e.secretHigh(), e.secretLow(), 0);
        victim.connection(rank);
        return ch;
    }

    /** One frame on the socket of {@link #connectAsRankZero}. */
    void send(int type, int tag, long a, long b, long c, long d, int payloadBytes) throws Exception {
        send(attacker, type, tag, a, b, c, d, payloadBytes);
    }

    /** One frame: the header's fields, then {@code payloadBytes} bytes of 0xFF. */
    static void send(SocketChannel to, int type, int tag, long a, long b, long c, long d, int payloadBytes) throws Exception {
        ByteBuffer f = ByteBuffer.allocate(Frame.HEADER + payloadBytes).order(ByteOrder.LITTLE_ENDIAN);
        f.putInt(type).putInt(tag).putLong(a).putLong(b).putLong(c).putLong(d);
        while (f.hasRemaining()) {
            f.put((byte) 0xFF);
        }
        f.flip();
        while (f.hasRemaining()) {
            to.write(f);
        }
    }

    @Override
    public void close() throws Exception {
        for (SocketChannel ch : sockets) {
            ch.close();
        }
        victim.close();
        store.close();
        server.close();
    }
}
