package io.rdma4j.transport.tcp;

import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.TransportTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
    private HostilePeer p;
    private TcpTransport victim;
    private RegisteredBuffer region;

    @BeforeEach
    void start() {
        p = new HostilePeer();
        victim = p.victim;
        region = p.region;
    }

    @AfterEach
    void stop() throws Exception {
        p.close();
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
        TcpEndpoint e = p.endpoint();
        p.connectAsRankZero(e.secretHigh(), e.secretLow());
        var c = victim.connection(0);
        RegisteredBuffer other = victim.allocate(64);
        long pending = c.irecv(other, 0, 64, 1);
        long key = region.remote().key();
        switch (type) {
            case Frame.WRITE -> p.send(type, 0, keyDelta == 0 ? key : key + keyDelta, offset, length, -1, payload);
            case Frame.READ_REQ -> p.send(type, 0, key, offset, length, 12345, 0);
            case Frame.DATA -> p.send(type, 0, offset, length, 0, 0, payload);
            default -> p.send(type, 0, 0, 0, 0, 0, 0);
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
        // The victim closed the socket: after any CTS frames sent before, the p.attacker reads end
        // of stream (a socket left open would time out here).
        p.attacker.configureBlocking(true);
        p.attacker.socket().setSoTimeout(5000);
        byte[] buf = new byte[1 << 16];
        while (p.attacker.socket().getInputStream().read(buf) >= 0) {
            Thread.onSpinWait();
        }
    }

    @Test
    void aConnectionWithoutTheListenerSecretIsRefused() throws Exception {
        TcpEndpoint e = p.endpoint();
        p.connectAsRankZero(e.secretHigh() ^ 1, e.secretLow());
        TransportTimeoutException t = assertThrows(TransportTimeoutException.class, () -> victim.connection(0));
        assertEquals(0, t.peer());
        p.attacker.socket().setSoTimeout(5000);
        assertEquals(-1, p.attacker.socket().getInputStream().read(), "the refused socket is closed");
    }

    @Test
    void aValidWriteFromTheSamePeerLands() throws Exception {
        TcpEndpoint e = p.endpoint();
        p.connectAsRankZero(e.secretHigh(), e.secretLow());
        var c = victim.connection(0);
        p.send(Frame.WRITE, 0, region.remote().key(), 4000, 96, 7, 96);
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
        TcpEndpoint e = p.endpoint();
        p.connectAsRankZero(e.secretHigh(), e.secretLow());
        var c = victim.connection(0);
        RegisteredBuffer other = victim.allocate(64);
        long pending = c.irecv(other, 0, 64, 1);
        // The flood comes from a thread of its own: more than the socket buffers hold, so it is
        // read only while the victim progresses in its await below (how much the kernel buffers
        // for a reader that does not read differs between hosts).
        Thread flood = Thread.ofPlatform().name("cts-flood").start(() -> {
            ByteBuffer many = ByteBuffer.allocate(Frame.HEADER * 4096).order(ByteOrder.LITTLE_ENDIAN);
            for (int sent = 0; sent <= TcpConnection.MAX_UNMATCHED_CTS; sent += 4096) {
                many.clear();
                for (int k = 0; k < 4096; k++) {
                    many.putInt(Frame.CTS).putInt(9).putLong(sent + k).putLong(64).putLong(0).putLong(0);
                }
                many.flip();
                try {
                    while (many.hasRemaining()) {
                        p.attacker.write(many);
                    }
                } catch (java.io.IOException closed) {
                    return; // cut off already
                }
            }
        });
        TransportException failure = assertThrows(TransportException.class, () -> victim.await(pending, WAIT));
        assertEquals(0, failure.peer());
        assertTrue(failure.getMessage().contains("clear-to-sends that no send has used"), failure.getMessage());
        flood.join(TimeUnit.NANOSECONDS.toMillis(WAIT));
        assertFalse(flood.isAlive(), "the flood ends once the victim cut the connection");
    }
}
