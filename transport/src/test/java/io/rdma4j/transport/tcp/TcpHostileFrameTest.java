package io.rdma4j.transport.tcp;

import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.TransportTimeoutException;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.bootstrap.TcpStore;
import io.rdma4j.transport.bootstrap.TcpStoreServer;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A peer that passed the handshake (it could read the store) but sends frames outside what this
 * rank registered: each is rejected before a byte is written, and the connection fails.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class TcpHostileFrameTest {
    private static final long WAIT = TimeUnit.SECONDS.toNanos(10);
    private TcpStoreServer server;
    private Store store;
    private TcpTransport victim;
    private RegisteredBuffer region;
    private SocketChannel attacker;

    @BeforeEach
    void start() {
        server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "t");
        store = TcpStore.builder().address("127.0.0.1").port(server.port()).token("t").build();
        TransportConfig config = LocalGroup.config(TransportConfig.Provider.TCP).toBuilder().timeout(Duration.ofSeconds(2)).build();
        victim = new TcpTransport(config, store, 1, 2);
        region = victim.allocate(4096);
        region.segment().fill((byte) 0x5A);
    }

    @AfterEach
    void stop() throws Exception {
        if (attacker != null) {
            attacker.close();
        }
        victim.close();
        store.close();
        server.close();
    }

    private TcpEndpoint victimEndpoint() {
        return TcpEndpoint.fromBytes(1, store.get("rdma4j/tcp/endpoint/1", Duration.ofSeconds(5)));
    }

    /** Connects as rank 0 with the given secret halves. */
    private void connectAsRankZero(long secretHigh, long secretLow) throws Exception {
        TcpEndpoint e = victimEndpoint();
        attacker = SocketChannel.open(new InetSocketAddress(e.host(), e.port()));
        send(Frame.HELLO, Frame.VERSION, Frame.MAGIC, 0, secretHigh, secretLow, 0);
    }

    private void send(int type, int tag, long a, long b, long c, long d, int payloadBytes) throws Exception {
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

    @ParameterizedTest(name = "{0}")
    @CsvSource({
            "write past the end,        5, 0, 4000, 200, 200",
            "write at negative offset,  5, 0, -8, 8, 8",
            "write overflowing offset,  5, 0, 9223372036854775807, 16, 16",
            "write with a made-up key,  5, 77, 0, 8, 8",
            "read past the end,         6, 0, 1, 4096, 0",
            "data for no receive,       3, -1, 999, 8, 8",
            "unknown frame type,        99, 0, 0, 0, 0",
    })
    void aFrameOutsideTheRegisteredBoundsFailsTheConnectionAndWritesNothing(String name, int type, long keyDelta,
                                                                              long offset, long length, int payload) throws Exception {
        TcpEndpoint e = victimEndpoint();
        connectAsRankZero(e.secretHigh(), e.secretLow());
        var c = victim.connection(0);
        RegisteredBuffer other = victim.allocate(64);
        long pending = c.irecv(other, 0, 64, 1);
        long key = region.remote().key();
        switch (type) {
            case Frame.WRITE -> send(type, 0, keyDelta == 0 ? key : key + keyDelta, offset, length, -1, payload);
            case Frame.READ_REQ -> send(type, 0, key, offset, length, 12345, 0);
            case Frame.DATA -> send(type, 0, offset, length, 0, 0, payload);
            default -> send(type, 0, 0, 0, 0, 0, 0);
        }
        TransportException failure = assertThrows(TransportException.class, () -> victim.await(pending, WAIT));
        assertEquals(0, failure.peer());
        assertTrue(failure.getMessage().contains("peer 0"), failure.getMessage());
        assertTrue(!(failure instanceof TransportTimeoutException), "rejected at once, not timed out: " + failure);
        for (long i = 0; i < 4096; i++) {
            if (region.segment().get(ValueLayout.JAVA_BYTE, i) != 0x5A) {
                fail("byte " + i + " of the registered region was written by a rejected frame");
            }
        }
        assertThrows(TransportException.class, () -> c.irecv(other, 0, 64, 1), "the connection stays failed");
        // The victim closed the socket: after any CTS frames sent before, the attacker reads end
        // of stream (a socket left open would time out here).
        attacker.configureBlocking(true);
        attacker.socket().setSoTimeout(5000);
        byte[] buf = new byte[1 << 16];
        while (attacker.socket().getInputStream().read(buf) >= 0) {
            Thread.onSpinWait();
        }
    }

    @Test
    void aConnectionWithoutTheListenerSecretIsRefused() throws Exception {
        TcpEndpoint e = victimEndpoint();
        connectAsRankZero(e.secretHigh() ^ 1, e.secretLow());
        TransportTimeoutException t = assertThrows(TransportTimeoutException.class, () -> victim.connection(0));
        assertEquals(0, t.peer());
        attacker.socket().setSoTimeout(5000);
        assertEquals(-1, attacker.socket().getInputStream().read(), "the refused socket is closed");
    }

    @Test
    void aValidWriteFromTheSamePeerLands() throws Exception {
        TcpEndpoint e = victimEndpoint();
        connectAsRankZero(e.secretHigh(), e.secretLow());
        var c = victim.connection(0);
        send(Frame.WRITE, 0, region.remote().key(), 4000, 96, 7, 96);
        long deadline = System.nanoTime() + WAIT;
        long imm;
        while ((imm = c.pollImmediate()) == -1 && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertEquals(7, imm);
        assertEquals((byte) 0xFF, region.segment().get(ValueLayout.JAVA_BYTE, 4000));
        assertEquals((byte) 0xFF, region.segment().get(ValueLayout.JAVA_BYTE, 4095));
        assertEquals((byte) 0x5A, region.segment().get(ValueLayout.JAVA_BYTE, 3999));
    }

    @Test
    void aPeerThatSendsClearToSendsWithoutEndIsCutOff() throws Exception {
        TcpEndpoint e = victimEndpoint();
        connectAsRankZero(e.secretHigh(), e.secretLow());
        var c = victim.connection(0);
        RegisteredBuffer other = victim.allocate(64);
        long pending = c.irecv(other, 0, 64, 1);
        ByteBuffer many = ByteBuffer.allocate(Frame.HEADER * 4096).order(ByteOrder.LITTLE_ENDIAN);
        for (int sent = 0; sent <= TcpConnection.MAX_UNMATCHED_CTS; sent += 4096) {
            many.clear();
            for (int k = 0; k < 4096; k++) {
                many.putInt(Frame.CTS).putInt(9).putLong(sent + k).putLong(64).putLong(0).putLong(0);
            }
            many.flip();
            try {
                while (many.hasRemaining()) {
                    attacker.write(many);
                }
            } catch (java.io.IOException closed) {
                break; // cut off already
            }
        }
        TransportException failure = assertThrows(TransportException.class, () -> victim.await(pending, WAIT));
        assertEquals(0, failure.peer());
        assertTrue(failure.getMessage().contains("clear-to-sends that no send has used"), failure.getMessage());
    }
}
