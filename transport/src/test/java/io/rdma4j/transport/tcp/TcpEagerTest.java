package io.rdma4j.transport.tcp;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The TCP provider's eager path: a small send goes before its receive's CTS, is kept by the
 * receiver until a receive takes it, and still completes only once one did.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpEagerTest {
    private static final Duration RUN = Duration.ofSeconds(45);
    private static final long WAIT = TimeUnit.SECONDS.toNanos(20);
    private LocalGroup group;

    @BeforeEach
    void start() {
        group = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP));
    }

    @AfterEach
    void stop() {
        group.close();
    }

    /** Up to the bound: a collective's whole small-vector message (64 KiB and its descriptor) goes eagerly. */
    @ParameterizedTest
    @ValueSource(ints = {200, TcpConnection.EAGER_BYTES})
    void aSendUpToTheEagerBoundReachesAReceivePostedLaterWhileTheSenderDoesNotProgress(int length) throws Exception {
        CountDownLatch sent = new CountDownLatch(1);
        CountDownLatch received = new CountDownLatch(1);
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            try (RegisteredBuffer b = t.allocate(length + 56)) {
                if (rank == 0) {
                    b.segment().fill((byte) 7);
                    long send = c.isend(b, 0, length, 3);
                    c.flush();
                    sent.countDown();
                    // No call into the transport until the peer has the data: a send that waited
                    // for the receive's CTS would never be written.
                    assertTrue(received.await(30, TimeUnit.SECONDS), "the receive did not complete");
                    assertEquals(length, t.await(send, WAIT));
                } else {
                    assertTrue(sent.await(30, TimeUnit.SECONDS));
                    Thread.sleep(200); // the message arrives before the receive is posted
                    assertEquals(length, t.await(c.irecv(b, 0, length + 56, 3), WAIT));
                    for (int i = 0; i < length; i++) {
                        assertEquals(7, b.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i);
                    }
                    received.countDown();
                }
            }
        });
    }

    @Test
    void sendsBeyondTheEagerWindowAndLargeOnesArriveInTheOrderSent() throws Exception {
        int n = 3 * TcpConnection.EAGER_WINDOW + 5;
        int large = TcpConnection.EAGER_BYTES + 64;
        CountDownLatch sent = new CountDownLatch(1);
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            try (RegisteredBuffer b = t.allocate((long) n * large)) {
                long[] ids = new long[n];
                if (rank == 0) {
                    for (int i = 0; i < n; i++) {
                        b.segment().asSlice((long) i * large, size(i, large)).fill((byte) (i + 1));
                        ids[i] = c.isend(b, (long) i * large, size(i, large), 9);
                    }
                    c.flush();
                    sent.countDown();
                    for (int i = 0; i < n; i++) {
                        assertEquals(size(i, large), t.await(ids[i], WAIT), "send " + i);
                    }
                } else {
                    assertTrue(sent.await(30, TimeUnit.SECONDS));
                    Thread.sleep(200);
                    for (int i = 0; i < n; i++) {
                        ids[i] = c.irecv(b, (long) i * large, large, 9);
                    }
                    for (int i = 0; i < n; i++) {
                        assertEquals(size(i, large), t.await(ids[i], WAIT), "receive " + i);
                        for (long j = 0; j < size(i, large); j += 97) {
                            assertEquals((byte) (i + 1), b.segment().get(ValueLayout.JAVA_BYTE, (long) i * large + j),
                                    "receive " + i + " byte " + j);
                        }
                    }
                }
            }
        });
    }

    /** Every seventh message is too large to go eagerly: it waits for its CTS, and later small ones wait behind it. */
    private static long size(int i, int large) {
        return i % 7 == 3 ? large : 8 + i;
    }

    @Test
    void aKeptMessageLargerThanTheReceiveThatTakesItFailsBothSides() throws Exception {
        CountDownLatch sent = new CountDownLatch(1);
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            try (RegisteredBuffer b = t.allocate(1024)) {
                if (rank == 0) {
                    long send = c.isend(b, 0, 100, 4);
                    c.flush();
                    sent.countDown();
                    TransportException e = assertThrows(TransportException.class, () -> t.await(send, WAIT));
                    assertEquals(1, e.peer());
                    assertTrue(e.getMessage().contains("offered only 50 bytes"), e.getMessage());
                } else {
                    assertTrue(sent.await(30, TimeUnit.SECONDS));
                    Thread.sleep(200);
                    long recv = c.irecv(b, 0, 50, 4);
                    TransportException e = assertThrows(TransportException.class, () -> t.await(recv, WAIT));
                    assertEquals(0, e.peer());
                    assertTrue(e.getMessage().contains("sent 100 bytes under tag 4"), e.getMessage());
                    // the connection stays usable
                    long again = c.irecv(b, 0, 1024, 5);
                    assertEquals(0, t.await(again, WAIT));
                }
                if (rank == 0) {
                    assertEquals(0, t.await(c.isend(b, 0, 0, 5), WAIT));
                }
            }
        });
    }

    @Test
    void aReceiveTakingAKeptMessageSendsItsCtsAtOnceAndAPeerBeyondTheWindowIsRejected() throws Exception {
        try (HostilePeer p = new HostilePeer()) {
            TcpEndpoint e = p.endpoint();
            p.connectAsRankZero(e.secretHigh(), e.secretLow());
            Transport victim = p.victim;
            Connection c = victim.connection(0);
            RegisteredBuffer b = victim.allocate(64);
            p.send(Frame.EAGER, 3, 0, 8, 0, 0, 8); // before any receive of tag 3
            long other = c.irecv(b, 32, 8, 98);
            long deadline = System.nanoTime() + WAIT;
            for (int i = 0; i < 500; i++) {
                assertEquals(Transport.PENDING, victim.test(other)); // drives the victim: it reads and keeps the message
                Thread.sleep(1);
            }
            long recv = c.irecv(b, 0, 8, 3);
            assertEquals(8, victim.test(recv), "the kept message completed the receive when it was posted");
            for (int i = 0; i < 8; i++) {
                assertEquals((byte) 0xFF, b.segment().get(ValueLayout.JAVA_BYTE, i));
            }
            // Its CTS was written without another call into the victim: read frames until it shows.
            ByteBuffer in = ByteBuffer.allocate(Frame.HEADER).order(ByteOrder.LITTLE_ENDIAN);
            boolean seen = false;
            p.attacker.configureBlocking(false);
            while (!seen && System.nanoTime() < deadline) {
                if (p.attacker.read(in) < 0) {
                    break;
                }
                if (!in.hasRemaining()) {
                    in.flip();
                    seen = in.getInt(Frame.OFF_TYPE) == Frame.CTS && in.getInt(Frame.OFF_TAG) == 3
                            && in.getLong(Frame.OFF_B) == 8;
                    in.clear();
                }
            }
            assertTrue(seen, "no CTS for tag 3 came out");
            long pending = c.irecv(b, 40, 8, 1);
            for (int i = 0; i <= TcpConnection.EAGER_WINDOW; i++) {
                p.send(Frame.EAGER, 2, 0, 8, 0, 0, 8);
            }
            TransportException rejected = assertThrows(TransportException.class, () -> victim.await(pending, WAIT));
            assertTrue(rejected.getMessage().contains("more than " + TcpConnection.EAGER_WINDOW
                    + " eager messages that no receive took"), rejected.getMessage());
        }
    }
}
