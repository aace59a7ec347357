package io.rdma4j.transport.tcp;

import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
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
import java.nio.channels.SocketChannel;
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
        floodUntilCutOff(TcpConnection.MAX_UNMATCHED_CTS,
                (many, k) -> many.putInt(Frame.CTS).putInt(9).putLong(k).putLong(64).putLong(0).putLong(0),
                "clear-to-sends that no send has used");
    }

    @Test
    void aPeerThatAsksForReadsWithoutReadingTheResponsesIsCutOff() throws Exception {
        long key = region.remote().key();
        // the responses fill the socket, which this peer never reads
        floodUntilCutOff(TcpConnection.MAX_QUEUED_READ_RESPONSES + (1 << 16),
                (many, k) -> many.putInt(Frame.READ_REQ).putInt(0).putLong(key).putLong(0).putLong(4096).putLong(k),
                "read requests without reading the responses");
    }

    /** Frame {@code k} of a flood, put into the buffer. */
    private interface FloodFrame {
        void put(ByteBuffer many, int k);
    }

    /**
     * A peer sends more than {@code frames} frames while a receive of the victim waits: the
     * victim cuts the connection, saying {@code why}, and the flood ends.
     */
    private void floodUntilCutOff(int frames, FloodFrame frame, String why) throws Exception {
        TcpEndpoint e = p.endpoint();
        p.connectAsRankZero(e.secretHigh(), e.secretLow());
        var c = victim.connection(0);
        RegisteredBuffer other = victim.allocate(64);
        long pending = c.irecv(other, 0, 64, 1);
        // The flood comes from a thread of its own: more than the socket buffers hold, so it is
        // read only while the victim progresses in its await below (how much the kernel buffers
        // for a reader that does not read differs between hosts).
        Thread flood = Thread.ofPlatform().name("flood").start(() -> {
            ByteBuffer many = ByteBuffer.allocate(Frame.HEADER * 4096).order(ByteOrder.LITTLE_ENDIAN);
            for (int sent = 0; sent <= frames; sent += 4096) {
                many.clear();
                for (int k = 0; k < 4096; k++) {
                    frame.put(many, sent + k);
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
        TransportException failure = assertThrows(TransportException.class,
                () -> victim.await(pending, TimeUnit.SECONDS.toNanos(20)));
        assertEquals(0, failure.peer());
        assertTrue(failure.getMessage().contains(why), failure.getMessage());
        flood.join(TimeUnit.NANOSECONDS.toMillis(WAIT));
        assertFalse(flood.isAlive(), "the flood ends once the victim cut the connection");
    }

    @Test
    void aPeerThatBreaksTheProtocolAfterNamingAnotherRankLostIsBlamedItself() throws Exception {
        try (HostilePeer three = new HostilePeer(3)) {
            SocketChannel zero = three.connectAs(0);
            var c = three.victim.connection(0);
            long pending = c.irecv(three.victim.allocate(64), 0, 64, 1);
            HostilePeer.send(zero, Frame.FAULT, 0, 1, 0, 0, 0, 0);
            HostilePeer.send(zero, 99, 0, 0, 0, 0, 0, 0);
            TransportException failure = assertThrows(TransportException.class, () -> three.victim.await(pending, WAIT));
            assertEquals(0, failure.peer(), failure.getMessage());
            assertTrue(failure.getMessage().contains("after its fault frame"), failure.getMessage());
        }
    }

    @Test
    void aResponseToAnAbandonedReadIsHeldToTheReadsLength() throws Exception {
        TcpEndpoint e = p.endpoint();
        p.connectAsRankZero(e.secretHigh(), e.secretLow());
        var c = victim.connection(0);
        RegisteredBuffer target = victim.allocate(64);
        c.read(target, 0, new RemoteBuffer(0, 0, 1 << 20, 1, ""), 0, 64);
        c.flush();
        ByteBuffer request = ByteBuffer.allocate(Frame.HEADER).order(ByteOrder.LITTLE_ENDIAN);
        p.attacker.socket().setSoTimeout(5000);
        while (request.hasRemaining()) {
            p.attacker.read(request);
        }
        assertEquals(Frame.READ_REQ, request.getInt(Frame.OFF_TYPE));
        long readId = request.getLong(Frame.OFF_D);
        target.close(); // the read is abandoned: its response is to be dropped when it comes
        RegisteredBuffer other = victim.allocate(64);
        long pending = c.irecv(other, 0, 64, 1);
        // a response far longer than the read: the stream would swallow it for ever
        p.send(Frame.READ_RESP, 0, readId, 1L << 40, 0, 0, 0);
        TransportException failure = assertThrows(TransportException.class, () -> victim.await(pending, WAIT));
        assertEquals(0, failure.peer());
        assertFalse(failure instanceof TransportTimeoutException, "rejected at once, not timed out: " + failure);
        assertTrue(failure.getMessage().contains("for no read posted to it of that length"), failure.getMessage());
    }

    @Test
    void immediatesNotPolledHoldThePeersStreamBackAndAllComeInOrderOncePolled() throws Exception {
        TcpEndpoint e = p.endpoint();
        p.connectAsRankZero(e.secretHigh(), e.secretLow());
        TcpConnection c = (TcpConnection) victim.connection(0);
        RegisteredBuffer other = victim.allocate(64);
        long pending = c.irecv(other, 0, 64, 1);
        int writes = 2 * TcpConnection.MAX_UNPOLLED_IMMEDIATES;
        ByteBuffer many = ByteBuffer.allocate(Frame.HEADER * (writes + 1)).order(ByteOrder.LITTLE_ENDIAN);
        for (int k = 0; k < writes; k++) {
            many.putInt(Frame.WRITE).putInt(0).putLong(region.remote().key()).putLong(0).putLong(0).putLong(k);
        }
        many.putInt(Frame.EAGER).putInt(1).putLong(0).putLong(0).putLong(0).putLong(0); // the receive's message, behind them
        many.flip();
        while (many.hasRemaining()) {
            p.attacker.write(many);
        }
        int most = 0;
        long heldSince = 0;
        long deadline = System.nanoTime() + WAIT;
        while (System.nanoTime() < deadline && (heldSince == 0 || System.nanoTime() - heldSince < 200_000_000L)) {
            assertEquals(-1, victim.test(pending), "the message behind the unpolled immediates waits for them");
            most = Math.max(most, c.unpolledImmediates());
            if (heldSince == 0 && most == TcpConnection.MAX_UNPOLLED_IMMEDIATES) {
                heldSince = System.nanoTime();
            }
        }
        assertEquals(TcpConnection.MAX_UNPOLLED_IMMEDIATES, most, "immediates held at once");
        TransportTimeoutException held = assertThrows(TransportTimeoutException.class,
                () -> victim.await(pending, TimeUnit.MILLISECONDS.toNanos(200)));
        assertTrue(held.getMessage().contains("not taken with pollImmediate"), held.getMessage());
        for (int k = 0; k < writes; k++) {
            long imm;
            long until = System.nanoTime() + WAIT;
            while ((imm = c.pollImmediate()) == -1 && System.nanoTime() < until) {
                Thread.onSpinWait();
            }
            assertEquals(k, imm, "immediate " + k);
        }
        assertEquals(0, victim.await(pending, WAIT), "the message behind them arrives once they were taken");
    }

    @Test
    void peersWhoseSocketsStayFullCostTheFaultWritesTimeOnceAndDoNotKeepItFromTheOthers() throws Exception {
        int stuck = 8; // ranks 1..8 never read; rank 9 reads; rank 0 is lost; the victim is rank 10
        try (HostilePeer group = new HostilePeer(stuck + 3)) {
            TcpTransport v = group.victim;
            SocketChannel lost = group.connectAs(0);
            RegisteredBuffer source = v.allocate(1 << 20);
            for (int r = 1; r <= stuck; r++) {
                group.connectAs(r, 4096); // a receive buffer that does not grow
                TcpConnection c = (TcpConnection) v.connection(r);
                RemoteBuffer anywhere = new RemoteBuffer(r, 0, 1 << 20, 1, "");
                // more than the kernel buffers of both ends hold (tcp_wmem: 4 MiB at most by
                // default), so that the socket stays full however far the sending one grows
                for (int k = 0; k < 16; k++) {
                    c.write(source, 0, anywhere, 0, 1 << 20, -1);
                    c.flush();
                }
                assertTrue(c.hasOutput(), "rank " + r + "'s socket is full");
            }
            SocketChannel reader = group.connectAs(stuck + 1);
            long pending = v.connection(0).irecv(v.allocate(64), 0, 64, 1);
            lost.close();
            assertEquals(0, assertThrows(TransportException.class, () -> v.await(pending, WAIT)).peer());
            long start = System.nanoTime();
            v.close();
            long closeMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            // one deadline of 100 ms for all eight, where each had its own (800 ms at least)
            assertTrue(closeMillis < 500, "close took " + closeMillis + " ms");
            ByteBuffer frame = ByteBuffer.allocate(Frame.HEADER).order(ByteOrder.LITTLE_ENDIAN);
            reader.socket().setSoTimeout(5000);
            while (frame.hasRemaining()) {
                assertTrue(reader.read(frame) >= 0, "the reading peer got a whole frame before the end");
            }
            assertEquals(Frame.FAULT, frame.getInt(Frame.OFF_TYPE));
            assertEquals(0, frame.getLong(Frame.OFF_A), "the reading peer was told rank 0 was lost");
        }
    }
}
