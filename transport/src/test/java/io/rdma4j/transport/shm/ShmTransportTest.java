package io.rdma4j.transport.shm;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.SharedWindow;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.TransportTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

import static io.rdma4j.transport.shm.ShmTestGroup.TIMEOUT_NANOS;
import static io.rdma4j.transport.shm.ShmTestGroup.check;
import static io.rdma4j.transport.shm.ShmTestGroup.fill;
import static io.rdma4j.transport.shm.ShmTestGroup.runRanks;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The shm provider with its ranks on threads of this JVM (see ShmMultiProcessTest for processes). */
class ShmTransportTest {
    static final long[] SIZES = {0, 1, 4095, (1 << 20) + 3, 64L << 20};
    private static final long GUARD = 64;
    private static final byte CANARY = (byte) 0xA5;

    private final ShmTestGroup group = new ShmTestGroup();

    @AfterEach
    void cleanUp() {
        group.close();
    }

    /** direct: the receiver's target is shared memory (one copy); else private memory through the bounce buffer. */
    @ParameterizedTest(name = "direct={0}")
    @ValueSource(booleans = {true, false})
    void twoSidedDataIntegrityForAllSizes(boolean direct) throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        long max = SIZES[SIZES.length - 1];
        runRanks(2, rank -> {
            try (Arena arena = Arena.ofConfined()) {
                Transport me = t[rank];
                Connection c = me.connection(1 - rank);
                if (rank == 0) {
                    RegisteredBuffer src = me.register(arena.allocate(max + 7, 64));
                    for (int i = 0; i < SIZES.length; i++) {
                        fill(src.segment(), 7, SIZES[i], i);
                        assertEquals(SIZES[i], me.await(c.isend(src, 7, SIZES[i], 42), TIMEOUT_NANOS));
                    }
                } else {
                    RegisteredBuffer dst = direct ? me.allocate(max + 2 * GUARD)
                            : me.register(arena.allocate(max + 2 * GUARD, 64));
                    assertEquals(direct, dst.remotelyAccessible());
                    for (int i = 0; i < SIZES.length; i++) {
                        dst.segment().fill(CANARY);
                        long got = me.await(c.irecv(dst, GUARD, SIZES[i], 42), TIMEOUT_NANOS);
                        assertEquals(SIZES[i], got, "bytes received for size " + SIZES[i]);
                        assertEquals(-1, check(dst.segment(), GUARD, SIZES[i], i), "data of size " + SIZES[i]);
                        assertGuards(dst.segment(), GUARD, SIZES[i]);
                    }
                }
            }
        });
        closeAll(t);
    }

    @Test
    void oneSidedWriteWithImmediateThenReadBack() throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        long max = SIZES[SIZES.length - 1];
        runRanks(2, rank -> {
            Transport me = t[rank];
            Connection c = me.connection(1 - rank);
            if (rank == 1) {
                RegisteredBuffer target = me.allocate(max + 2 * GUARD);
                target.segment().fill(CANARY);
                group.store.set("target", target.remote().toBytes());
                for (int i = 0; i < SIZES.length; i++) {
                    long imm = waitImmediate(c);
                    assertEquals(1000 + i, imm, "immediates arrive in order");
                    assertEquals(-1, check(target.segment(), GUARD, SIZES[i], i), "data visible with immediate " + imm);
                    assertGuards(target.segment(), GUARD, SIZES[i]);
                    fill(target.segment(), GUARD, SIZES[i], 100 + i); // for the read back
                    // Tell the writer the region may be reused: a zero-byte message.
                    me.await(c.isend(target, 0, 0, 7), TIMEOUT_NANOS);
                }
            } else {
                RemoteBuffer target = RemoteBuffer.fromBytes(group.store.get("target", Duration.ofSeconds(30)));
                assertEquals(1, target.owner());
                try (Arena arena = Arena.ofConfined()) {
                    RegisteredBuffer src = me.register(arena.allocate(max, 64));
                    RegisteredBuffer back = me.allocate(max);
                    for (int i = 0; i < SIZES.length; i++) {
                        fill(src.segment(), 0, SIZES[i], i);
                        assertEquals(SIZES[i], me.await(c.write(src, 0, target, GUARD, SIZES[i], 1000 + i), TIMEOUT_NANOS));
                        assertEquals(0, me.await(c.irecv(back, 0, 0, 7), TIMEOUT_NANOS));
                        assertEquals(SIZES[i], me.await(c.read(back, 0, target, GUARD, SIZES[i]), TIMEOUT_NANOS));
                        assertEquals(-1, check(back.segment(), 0, SIZES[i], 100 + i), "read back of " + SIZES[i]);
                    }
                }
            }
        });
        closeAll(t);
    }

    @Test
    void tagsMatchIndependentlyAndKeepOrder() throws Exception {
        int n = 40;
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        runRanks(2, rank -> {
            Transport me = t[rank];
            Connection c = me.connection(1 - rank);
            long len = 3000;
            if (rank == 0) {
                RegisteredBuffer src = me.allocate(len * 2 * n);
                long[] ids = new long[2 * n];
                for (int i = 0; i < n; i++) {
                    for (int tag = 1; tag <= 2; tag++) {
                        int k = 2 * i + tag - 1;
                        fill(src.segment(), k * len, len, tag * 1000 + i);
                        ids[k] = c.isend(src, k * len, len, tag);
                    }
                }
                for (long id : ids) {
                    assertEquals(len, me.await(id, TIMEOUT_NANOS));
                }
            } else {
                // All tag-2 receives first: they must get the tag-2 messages in send order, although
                // every tag-1 message was sent before its tag-2 sibling. Alternate direct and bounce.
                RegisteredBuffer shared = me.allocate(len * 2 * n);
                try (Arena arena = Arena.ofConfined()) {
                    RegisteredBuffer priv = me.register(arena.allocate(len * 2 * n));
                    long[] ids = new long[2 * n];
                    for (int tag = 2; tag >= 1; tag--) {
                        for (int i = 0; i < n; i++) {
                            int k = 2 * i + tag - 1;
                            ids[k] = c.irecv(i % 2 == 0 ? shared : priv, k * len, len, tag);
                        }
                    }
                    for (int k = 0; k < 2 * n; k++) {
                        assertEquals(len, me.await(ids[k], TIMEOUT_NANOS));
                    }
                    for (int i = 0; i < n; i++) {
                        for (int tag = 1; tag <= 2; tag++) {
                            int k = 2 * i + tag - 1;
                            MemorySegment s = (i % 2 == 0 ? shared : priv).segment();
                            assertEquals(-1, check(s, k * len, len, tag * 1000 + i), "message " + i + " of tag " + tag);
                        }
                    }
                }
            }
        });
        closeAll(t);
    }

    @Test
    void slowReceiverIsNeverOverrun() throws Exception {
        int n = 24;
        long len = 3 * ShmTransport.CHUNK_BYTES + 11; // several bounce chunks per message
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        runRanks(2, rank -> {
            Transport me = t[rank];
            Connection c = me.connection(1 - rank);
            if (rank == 0) {
                RegisteredBuffer src = me.allocate(len * n);
                long[] ids = new long[n];
                for (int i = 0; i < n; i++) {
                    fill(src.segment(), i * len, len, i);
                    ids[i] = c.isend(src, i * len, len, 5);
                }
                // The receiver has posted nothing yet (it waits for this key): the first send waits.
                assertEquals(Transport.PENDING, me.test(ids[0]));
                group.store.set("posted-nothing-yet", new byte[0]);
                for (long id : ids) {
                    assertEquals(len, me.await(id, TIMEOUT_NANOS));
                }
            } else {
                group.store.get("posted-nothing-yet", Duration.ofSeconds(30));
                try (Arena arena = Arena.ofConfined()) {
                    // Each receive offers exactly the message size, surrounded by canaries.
                    MemorySegment mem = arena.allocate(n * (len + 2 * GUARD));
                    mem.fill(CANARY);
                    RegisteredBuffer dst = me.register(mem);
                    for (int i = 0; i < n; i++) {
                        Thread.sleep(5);
                        long off = i * (len + 2 * GUARD) + GUARD;
                        assertEquals(len, me.await(c.irecv(dst, off, len, 5), TIMEOUT_NANOS));
                        assertEquals(-1, check(mem, off, len, i), "message " + i);
                        assertGuards(mem.asSlice(off - GUARD, len + 2 * GUARD), GUARD, len);
                    }
                }
            }
        });
        closeAll(t);
    }

    /**
     * More receives than the CTS ring holds, and the one the sender needs first is posted last:
     * the earlier entries must not block it (no deadlock), and every message still lands right.
     */
    @Test
    void receivesBeyondTheCtsRingDoNotBlockALaterTag() throws Exception {
        int n = 3 * ShmTransport.CTS_RING;
        ShmTransport[] t = new ShmTransport[2];
        for (int r = 0; r < 2; r++) {
            t[r] = new ShmTransport(group.config().toBuilder().maxOutstandingRequests(4 * n).build(), group.store, r, 2);
        }
        runRanks(2, rank -> {
            Transport me = t[rank];
            Connection c = me.connection(1 - rank);
            RegisteredBuffer buf = me.allocate(8L * (n + 1));
            if (rank == 1) {
                long[] ids = new long[n + 1];
                for (int i = 0; i < n; i++) {
                    ids[i] = c.irecv(buf, 8L * i, 8, 1);
                }
                ids[n] = c.irecv(buf, 8L * n, 8, 2);
                for (long id : ids) {
                    assertEquals(8, me.await(id, TIMEOUT_NANOS));
                }
                for (int i = 0; i <= n; i++) {
                    assertEquals(i, buf.segment().get(ValueLayout.JAVA_LONG, 8L * i), "message " + i);
                }
            } else {
                for (int i = 0; i <= n; i++) {
                    buf.segment().set(ValueLayout.JAVA_LONG, 8L * i, i);
                }
                assertEquals(8, me.await(c.isend(buf, 8L * n, 8, 2), TIMEOUT_NANOS), "tag 2 first");
                long[] ids = new long[n];
                for (int i = 0; i < n; i++) {
                    ids[i] = c.isend(buf, 8L * i, 8, 1);
                }
                for (long id : ids) {
                    assertEquals(8, me.await(id, TIMEOUT_NANOS));
                }
            }
        });
        closeAll(t);
    }

    /**
     * A write whose immediate finds the peer's immediate ring full waits, and later writes wait
     * behind it instead of overtaking: one-sided operations take effect in post order.
     */
    @Test
    void writesQueueBehindAFullImmediateRingInOrder() {
        int n = ShmTransport.IMMEDIATE_RING + 10;
        ShmTransport a = new ShmTransport(group.config().toBuilder().maxOutstandingRequests(2 * n).build(), group.store, 0, 2);
        ShmTransport b = group.transport(1, 2);
        Connection ab = a.connection(1);
        Connection ba = b.connection(0);
        RegisteredBuffer window = b.allocate(8);
        RegisteredBuffer src = a.allocate(8L * n);
        long[] ids = new long[n];
        for (int i = 0; i < n; i++) {
            src.segment().set(ValueLayout.JAVA_LONG, 8L * i, i);
            ids[i] = ab.write(src, 8L * i, window.remote(), 0, 8, i);
        }
        int full = ShmTransport.IMMEDIATE_RING;
        assertEquals(8, a.test(ids[full - 1]));
        assertEquals(Transport.PENDING, a.test(ids[full]), "its immediate has no room");
        assertEquals(Transport.PENDING, a.test(ids[full + 1]), "queued behind");
        assertEquals(full, window.segment().get(ValueLayout.JAVA_LONG, 0), "nothing after the blocked write landed");
        for (int i = 0; i < n; i++) {
            assertEquals(i, waitImmediate(ba), "immediates in order");
            a.connection(1).flush();
        }
        for (int i = full; i < n; i++) {
            assertEquals(8, a.await(ids[i], TIMEOUT_NANOS));
        }
        assertEquals(n - 1, window.segment().get(ValueLayout.JAVA_LONG, 0));
        closeAll(new ShmTransport[] {a, b});
    }

    /**
     * A one-sided write or read to a peer that closed its transport fails naming the peer: the
     * closed peer's regions still resolve (its files are gone, its mappings of ours too), so
     * the copy would land in memory nobody reads, or read what nobody writes, and report success.
     */
    @Test
    void oneSidedOperationsToAClosedPeerFailNamingIt() {
        ShmTransport a = group.transport(0, 2);
        ShmTransport b = group.transport(1, 2);
        Connection ab = a.connection(1);
        b.connection(0);
        RegisteredBuffer window = b.allocate(64);
        RemoteBuffer remote = window.remote();
        RegisteredBuffer local = a.allocate(64);
        assertEquals(64, a.await(ab.write(local, 0, remote, 0, 64, Connection.NO_IMMEDIATE), TIMEOUT_NANOS));
        b.close();
        TransportException w = assertThrows(TransportException.class,
                () -> a.await(ab.write(local, 0, remote, 0, 64, Connection.NO_IMMEDIATE), TIMEOUT_NANOS));
        assertEquals(1, w.peer());
        assertTrue(w.getMessage().contains("closed its transport"), w.getMessage());
        TransportException r = assertThrows(TransportException.class, () -> a.await(ab.read(local, 0, remote, 0, 64), TIMEOUT_NANOS));
        assertEquals(1, r.peer());
        a.close();
    }

    @Test
    void allToAllAmongFourRanks() throws Exception {
        int size = 4;
        long len = (1 << 20) + 3;
        ShmTransport[] t = new ShmTransport[size];
        for (int r = 0; r < size; r++) {
            t[r] = group.transport(r, size);
        }
        runRanks(size, rank -> {
            Transport me = t[rank];
            RegisteredBuffer src = me.allocate(len);
            RegisteredBuffer dst = me.allocate(len * size);
            fill(src.segment(), 0, len, rank);
            long[] ids = new long[2 * size];
            for (int p = 0; p < size; p++) {
                if (p != rank) {
                    ids[2 * p] = me.connection(p).irecv(dst, p * len, len, 0);
                    ids[2 * p + 1] = me.connection(p).isend(src, 0, len, 0);
                }
            }
            for (int p = 0; p < size; p++) {
                if (p != rank) {
                    assertEquals(len, me.await(ids[2 * p], TIMEOUT_NANOS));
                    assertEquals(len, me.await(ids[2 * p + 1], TIMEOUT_NANOS));
                    assertEquals(-1, check(dst.segment(), p * len, len, p), "data from rank " + p);
                }
            }
        });
        closeAll(t);
    }

    @Test
    void sendLargerThanReceiveFailsBothSides() throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        runRanks(2, rank -> {
            Transport me = t[rank];
            Connection c = me.connection(1 - rank);
            RegisteredBuffer buf = me.allocate(4096);
            buf.segment().fill(CANARY);
            TransportException e = assertThrows(TransportException.class, () -> me.await(
                    rank == 0 ? c.isend(buf, 0, 100, 3) : c.irecv(buf, 0, 50, 3), TIMEOUT_NANOS));
            assertEquals(1 - rank, e.peer());
            assertTrue(e.getMessage().contains("offered only 50 bytes") || e.getMessage().contains("sent 100 bytes"), e.getMessage());
            if (rank == 1) {
                assertGuards(buf.segment(), 0, 0);
                // The connection stays usable after a failed message.
                assertEquals(10, me.await(c.irecv(buf, 0, 10, 4), TIMEOUT_NANOS));
            } else {
                assertEquals(10, me.await(c.isend(buf, 0, 10, 4), TIMEOUT_NANOS));
            }
        });
        closeAll(t);
    }

    /**
     * Small sends go out before any receive exists (eagerly, up to the credits, the rest by
     * rendezvous), mixed with large ones of the same tags; the receiver posts its receives only
     * afterwards, every tag-2 one before any tag-1 one. Each receive must still get its tag's
     * message of the same rank in send order, and no send may complete before its receive.
     */
    @Test
    void sendsBeforeTheirReceivesKeepEachTagsOrderAcrossEagerAndRendezvous() throws Exception {
        int n = 3 * ShmConnection.EAGER_CREDITS;
        long stride = 3000;
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        runRanks(2, rank -> {
            Transport me = t[rank];
            Connection c = me.connection(1 - rank);
            RegisteredBuffer buf = me.allocate(stride * n);
            if (rank == 0) {
                long[] ids = new long[n];
                for (int i = 0; i < n; i++) {
                    fill(buf.segment(), i * stride, length(i, stride), i);
                    ids[i] = c.isend(buf, i * stride, length(i, stride), tag(i));
                }
                TransportTimeoutException e = assertThrows(TransportTimeoutException.class,
                        () -> me.await(ids[0], TimeUnit.MILLISECONDS.toNanos(20)));
                assertTrue(e.getMessage().contains("sent eagerly"), e.getMessage());
                group.store.set("all-sent", new byte[0]);
                for (int i = 0; i < n; i++) {
                    assertEquals(length(i, stride), me.await(ids[i], TIMEOUT_NANOS), "send " + i);
                }
            } else {
                group.store.get("all-sent", Duration.ofSeconds(30));
                long[] ids = new long[n];
                for (int wanted = 2; wanted >= 1; wanted--) {
                    for (int i = 0; i < n; i++) {
                        if (tag(i) == wanted) {
                            ids[i] = c.irecv(buf, i * stride, length(i, stride), wanted);
                        }
                    }
                }
                for (int i = 0; i < n; i++) {
                    assertEquals(length(i, stride), me.await(ids[i], TIMEOUT_NANOS), "receive " + i);
                    assertEquals(-1, check(buf.segment(), i * stride, length(i, stride), i), "message " + i);
                }
            }
        });
        closeAll(t);
    }

    /** Every third message is large (rendezvous); the others small enough to go eagerly, of varied lengths. */
    private static long length(int i, long large) {
        return i % 3 == 2 ? large : 1 + i % ShmConnection.EAGER_BYTES;
    }

    private static int tag(int i) {
        return 1 + (i / 2) % 2;
    }

    /**
     * A receive that an early message completes at once publishes its CTS at once, even on a side
     * that holds CTS entries back while it sends small messages: the peer's send completes
     * although the receiver calls nothing more.
     */
    @Test
    void aReceiveCompletedByAnEarlyMessageCompletesTheSendWithoutAnotherCall() throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        runRanks(2, rank -> {
            Transport me = t[rank];
            Connection c = me.connection(1 - rank);
            RegisteredBuffer buf = me.allocate(64);
            if (rank == 0) {
                assertEquals(8, me.await(c.irecv(buf, 0, 8, 1), TIMEOUT_NANOS));
                long id = c.isend(buf, 0, 8, 2);
                assertEquals(8, me.await(id, TIMEOUT_NANOS));
                group.store.set("send-completed", new byte[0]);
            } else {
                assertEquals(8, me.await(c.isend(buf, 0, 8, 1), TIMEOUT_NANOS)); // this side now sends eagerly
                awaitOneEarlyMessage(t[1], c);
                assertEquals(8, me.test(c.irecv(buf, 8, 8, 2)), "completed by the early message");
                group.store.get("send-completed", Duration.ofSeconds(30));
            }
        });
        closeAll(t);
    }

    /** Polls until the peer's eager message has arrived with no receive posted for it. */
    private static void awaitOneEarlyMessage(ShmTransport me, Connection c) {
        ShmConnection connection = (ShmConnection) c;
        long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (connection.earlyMessages() == 0 && System.nanoTime() < deadline) {
            me.progressAll();
        }
        assertEquals(1, connection.earlyMessages(), "the message arrived before its receive");
    }

    /** An eager message larger than its receive, posted after the message arrived: both sides fail. */
    @Test
    void anEarlyEagerMessageLargerThanItsReceiveFailsBothSides() throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        runRanks(2, rank -> {
            Transport me = t[rank];
            Connection c = me.connection(1 - rank);
            RegisteredBuffer buf = me.allocate(4096);
            buf.segment().fill(CANARY);
            if (rank == 0) {
                long id = c.isend(buf, 0, 30, 3);
                group.store.set("sent", new byte[0]);
                TransportException e = assertThrows(TransportException.class, () -> me.await(id, TIMEOUT_NANOS));
                assertTrue(e.getMessage().contains("offered only 20 bytes"), e.getMessage());
                assertEquals(10, me.await(c.isend(buf, 0, 10, 3), TIMEOUT_NANOS));
            } else {
                group.store.get("sent", Duration.ofSeconds(30));
                awaitOneEarlyMessage(t[1], c);
                TransportException e = assertThrows(TransportException.class,
                        () -> me.await(c.irecv(buf, 0, 20, 3), TIMEOUT_NANOS));
                assertTrue(e.getMessage().contains("sent 30 bytes"), e.getMessage());
                assertGuards(buf.segment(), 0, 0);
                // The next message of the tag goes to the next receive.
                assertEquals(10, me.await(c.irecv(buf, 0, 20, 3), TIMEOUT_NANOS));
            }
        });
        closeAll(t);
    }

    @Test
    void remoteDescriptorsAreCheckedAgainstTheRegisteredRegion() throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        runRanks(2, rank -> {
            Transport me = t[rank];
            Connection c = me.connection(1 - rank);
            if (rank == 1) {
                RegisteredBuffer region = me.allocate(4096);
                RegisteredBuffer neighbour = me.allocate(4096);
                neighbour.segment().fill(CANARY);
                group.store.set("region", region.remote().toBytes());
                group.store.get("probed", Duration.ofSeconds(30));
                region.close();
                group.store.set("closed", new byte[0]);
                group.store.get("done", Duration.ofSeconds(30));
                assertGuards(neighbour.segment(), 0, 0);
            } else {
                RemoteBuffer r = RemoteBuffer.fromBytes(group.store.get("region", Duration.ofSeconds(30)));
                RegisteredBuffer src = me.allocate(8192);
                // Outside the descriptor itself: refused before anything is looked up.
                assertThrows(IllegalArgumentException.class, () -> c.write(src, 0, r, 4000, 200, Connection.NO_IMMEDIATE));
                assertThrows(IllegalArgumentException.class, () -> c.read(src, 0, r, -1, 10));
                // A forged descriptor: longer than the region, another key, another file name.
                RemoteBuffer longer = new RemoteBuffer(1, r.address(), 8192, r.key(), r.name());
                TransportException e = assertThrows(TransportException.class,
                        () -> c.write(src, 0, longer, 0, 8192, Connection.NO_IMMEDIATE));
                assertEquals(1, e.peer());
                RemoteBuffer otherKey = new RemoteBuffer(1, r.address(), r.length(), r.key() + (1L << 32), r.name());
                assertThrows(TransportException.class, () -> c.write(src, 0, otherKey, 0, 1, Connection.NO_IMMEDIATE));
                RemoteBuffer otherName = new RemoteBuffer(1, r.address(), r.length(), r.key(), r.name() + "x");
                assertThrows(IllegalArgumentException.class, () -> c.read(src, 0, otherName, 0, 1));
                RemoteBuffer otherOwner = new RemoteBuffer(0, r.address(), r.length(), r.key(), r.name());
                assertThrows(IllegalArgumentException.class, () -> c.read(src, 0, otherOwner, 0, 1));
                assertEquals(4096, me.await(c.write(src, 0, r, 0, 4096, Connection.NO_IMMEDIATE), TIMEOUT_NANOS));
                group.store.set("probed", new byte[0]);
                group.store.get("closed", Duration.ofSeconds(30));
                // The owner freed the region: the old descriptor no longer resolves.
                assertThrows(TransportException.class, () -> c.write(src, 0, r, 0, 16, Connection.NO_IMMEDIATE));
                group.store.set("done", new byte[0]);
            }
        });
        closeAll(t);
    }

    @Test
    void abortUnblocksAWaiterAndFailsThePeer() throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        runRanks(2, rank -> {
            Transport me = t[rank];
            Connection c = me.connection(1 - rank);
            RegisteredBuffer buf = me.allocate(64);
            long id = c.irecv(buf, 0, 64, 1); // nobody ever sends
            group.store.set("posted" + rank, new byte[0]);
            group.store.get("posted" + (1 - rank), Duration.ofSeconds(30));
            if (rank == 0) {
                Thread aborter = new Thread(() -> {
                    sleep(200);
                    me.abort(new IllegalStateException("test abort"));
                });
                aborter.start();
                long start = System.nanoTime();
                TransportException e = assertThrows(TransportException.class, () -> me.await(id, TIMEOUT_NANOS));
                assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10));
                assertTrue(e.getMessage().contains("aborted"), e.getMessage());
                assertThrows(TransportException.class, () -> c.irecv(buf, 0, 1, 1));
                aborter.join();
            } else {
                TransportException e = assertThrows(TransportException.class, () -> me.await(id, TIMEOUT_NANOS));
                assertEquals(0, e.peer());
                assertTrue(e.getMessage().contains("peer 0 aborted"), e.getMessage());
            }
        });
        closeAll(t);
    }

    @Test
    void timeoutNamesThePeerAndTheOperation() throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        Connection c = t[0].connection(1);
        RegisteredBuffer buf = t[0].allocate(64);
        long id = c.irecv(buf, 0, 64, 9);
        TransportTimeoutException e = assertThrows(TransportTimeoutException.class,
                () -> t[0].await(id, TimeUnit.MILLISECONDS.toNanos(100)));
        assertEquals(1, e.peer());
        assertTrue(e.getMessage().contains("irecv of up to 64 bytes (tag 9) from peer 1"), e.getMessage());
        long send = c.isend(buf, 0, 8, 10);
        e = assertThrows(TransportTimeoutException.class, () -> t[0].await(send, TimeUnit.MILLISECONDS.toNanos(50)));
        assertTrue(e.getMessage().contains("no matching irecv posted by peer 1"), e.getMessage());
        // Still pending, and completes once the peer posts the receive.
        Connection back = t[1].connection(0);
        long recv = back.irecv(t[1].allocate(8), 0, 8, 10);
        assertEquals(8, t[0].await(send, TIMEOUT_NANOS));
        assertEquals(8, t[1].await(recv, TIMEOUT_NANOS));
        closeAll(t);
    }

    @Test
    void closingAPeerFailsItsPendingRequestsAndLeavesNoFiles() throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        Connection c = t[1].connection(0);
        t[0].connection(1);
        long id = c.irecv(t[1].allocate(64), 0, 64, 1);
        assertFalse(group.leftovers().isEmpty());
        t[0].close();
        t[0].close(); // idempotent
        TransportException e = assertThrows(TransportException.class, () -> t[1].await(id, TIMEOUT_NANOS));
        assertEquals(0, e.peer());
        assertTrue(e.getMessage().contains("peer 0 closed"), e.getMessage());
        assertThrows(TransportException.class, () -> t[0].allocate(1));
        t[1].close();
        assertEquals(java.util.List.of(), group.leftovers());
    }

    /**
     * The peer answers an eager send with its receive's CTS and closes before this side polls
     * again: whichever check first sees the close, the send the peer received completes and only
     * the one it never took fails. Here a wait on the peer's memory ({@code checkHealthy}, as a
     * shared-window wait does) sees it first.
     */
    @Test
    void aSendThePeerReceivedBeforeClosingCompletesWhicheverCheckSeesTheCloseFirst() {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        ShmConnection c0 = (ShmConnection) t[0].connection(1);
        Connection c1 = t[1].connection(0);
        RegisteredBuffer b0 = t[0].allocate(64);
        RegisteredBuffer b1 = t[1].allocate(64);
        fill(b0.segment(), 0, 32, 5);
        long taken = c0.isend(b0, 0, 32, 1);
        long neverTaken = c0.isend(b0, 0, 16, 3);
        assertEquals(32, t[1].await(c1.irecv(b1, 0, 64, 1), TIMEOUT_NANOS));
        assertEquals(-1, check(b1.segment(), 0, 32, 5));
        t[1].close();
        TransportException seen = assertThrows(TransportException.class, c0::checkHealthy);
        assertTrue(seen.getMessage().contains("peer 1 closed"), seen.getMessage());
        assertEquals(32, t[0].await(taken, TIMEOUT_NANOS), "the peer received it before it closed");
        TransportException e = assertThrows(TransportException.class, () -> t[0].await(neverTaken, TIMEOUT_NANOS));
        assertEquals(1, e.peer(), e.getMessage());
        t[0].close();
        assertEquals(java.util.List.of(), group.leftovers());
    }

    @Test
    void sharedWindowsAreReadInPlaceByPeersAndHaveOneOwner() throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        SharedWindow w0 = t[0].sharedWindow();
        SharedWindow w1 = t[1].sharedWindow();
        assertNull(t[0].sharedWindow(), "a transport hands its window out once");
        assertEquals(ShmTransport.windowBytes(2), w0.byteSize());
        assertEquals(2 * (1L << 20) + 4096, ShmTransport.windowBytes(2), "two 1 MiB slots and a header page");
        assertEquals(2 * (1L << 20) + 4096, ShmTransport.windowBytes(16), "32 MiB for all windows of 16 ranks");
        assertEquals(2 * (512L << 10) + 4096, ShmTransport.windowBytes(32), "and no more beyond");
        assertEquals(2 * (16L << 10) + 4096, ShmTransport.windowBytes(4096), "never below the small-message slots");
        long last = w0.byteSize() - 8;
        w0.local().set(ValueLayout.JAVA_LONG, last, 0x1234_5678_9ABCL);
        assertEquals(0x1234_5678_9ABCL, w1.peer(0).get(ValueLayout.JAVA_LONG, last), "the writer's bytes, in place");
        assertEquals(0, w0.peer(1).get(ValueLayout.JAVA_LONG, last), "each rank has its own, zeroed window");
        w1.checkPeer(0);
        t[0].close();
        TransportException e = assertThrows(TransportException.class, () -> w1.checkPeer(0));
        assertEquals(0, e.peer());
        assertTrue(e.getMessage().contains("peer 0 closed"), e.getMessage());
        t[1].close();
    }

    /** The futex pair: a sleeper on a peer's word wakes when the owner changes it and calls wake. */
    @Test
    void aRankSleepsOnAPeersWindowWordUntilItsOwnerWakesIt() throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        SharedWindow w0 = t[0].sharedWindow();
        SharedWindow w1 = t[1].sharedWindow();
        long word = 64;
        long longSleep = java.util.concurrent.TimeUnit.SECONDS.toNanos(20);
        // a word that already differs: back at once
        long t0 = System.nanoTime();
        assertTrue(w1.sleepWhile(0, word, 7, longSleep), "Linux x86-64 has futexes");
        assertTrue(System.nanoTime() - t0 < longSleep / 4, "returned at once");
        // the timeout bounds a sleep nobody ends
        t0 = System.nanoTime();
        w1.sleepWhile(0, word, 0, 50_000_000);
        long slept = System.nanoTime() - t0;
        assertTrue(slept >= 40_000_000 && slept < longSleep / 4, "slept " + slept + " ns for a 50 ms timeout");
        // woken by the owner long before the timeout
        java.util.concurrent.CompletableFuture<Long> sleeper = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            long s = System.nanoTime();
            while (w1.peer(0).get(ValueLayout.JAVA_INT, word) == 0 && System.nanoTime() - s < longSleep) {
                w1.sleepWhile(0, word, 0, longSleep);
            }
            return System.nanoTime() - s;
        });
        Thread.sleep(200);
        w0.local().set(ValueLayout.JAVA_INT, word, 1);
        w0.wake(word);
        long took = sleeper.get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertTrue(took < longSleep / 4, "the sleeper waited " + took + " ns: the wake did not reach it");
        // a word outside the window, or not an aligned int, is no futex word of it
        assertThrows(IndexOutOfBoundsException.class, () -> w1.sleepWhile(0, w0.byteSize(), 0, 1_000_000));
        assertThrows(IndexOutOfBoundsException.class, () -> w0.wake(-4));
        assertThrows(IllegalArgumentException.class, () -> w0.wake(word + 2));
        t[0].close();
        t[1].close();
    }

    /** After an abort that blames a peer, every refusal names that peer, as the TCP provider's do. */
    @Test
    void refusalsAfterAnAbortNameThePeerItBlamed() {
        try (ShmTransport t = group.transport(0, 1)) {
            t.abort(new TransportException(3, "rank 3 is gone"));
            TransportException e = assertThrows(TransportException.class, () -> t.allocate(64));
            assertEquals(3, e.peer());
            assertTrue(e.getMessage().contains("was aborted"), e.getMessage());
        }
    }

    /** A size whose alignment would overflow is refused before the slab allocator sees it, which stays whole. */
    @Test
    void anAllocationTooLargeForAnyFileSystemIsRefusedAndLeavesTheHeapUsable() {
        try (ShmTransport t = group.transport(0, 1)) {
            RegisteredBuffer first = t.allocate(100);
            assertThrows(IllegalArgumentException.class, () -> t.allocate(Long.MAX_VALUE - 10));
            RegisteredBuffer next = t.allocate(100);
            first.close();
            next.close();
            assertEquals(first.segment().address(), t.allocate(100).segment().address(), "the slab's space is whole again");
        }
    }

    @Test
    void requestIdsAreSingleUse() throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        RemoteBuffer target = t[1].allocate(16).remote();
        RegisteredBuffer src = t[0].allocate(16);
        long id = t[0].connection(1).write(src, 0, target, 0, 16, Connection.NO_IMMEDIATE);
        assertEquals(16, t[0].test(id));
        assertThrows(IllegalArgumentException.class, () -> t[0].test(id));
        long next = t[0].connection(1).write(src, 0, target, 0, 8, Connection.NO_IMMEDIATE);
        assertNotEquals(id, next, "a reused slot gets a new id");
        assertEquals(8, t[0].test(next));
        closeAll(t);
    }

    @Test
    void tooManyOutstandingRequestsIsAClearError() throws Exception {
        ShmTransport a = new ShmTransport(group.config().toBuilder().maxOutstandingRequests(4).build(), group.store, 0, 2);
        ShmTransport b = group.transport(1, 2);
        RegisteredBuffer buf = a.allocate(64);
        Connection c = a.connection(1);
        for (int i = 0; i < 4; i++) {
            c.irecv(buf, 0, 64, i);
        }
        TransportException e = assertThrows(TransportException.class, () -> c.irecv(buf, 0, 64, 99));
        assertTrue(e.getMessage().contains("too many outstanding requests (4)"), e.getMessage());
        closeAll(new ShmTransport[] {a, b});
    }

    @Test
    void registrationsAreCachedAndSlicesOfSharedBuffersStayRemote() throws Exception {
        try (ShmTransport t = group.transport(0, 1); Arena arena = Arena.ofConfined()) {
            MemorySegment priv = arena.allocate(256);
            RegisteredBuffer r = t.register(priv);
            assertSame(r, t.register(priv));
            assertFalse(r.remotelyAccessible());
            assertThrows(UnsupportedOperationException.class, r::remote);
            RegisteredBuffer shared = t.allocate(1 << 16);
            RegisteredBuffer slice = t.register(shared.segment().asSlice(4096, 100));
            assertTrue(slice.remotelyAccessible());
            assertEquals(shared.remote().address() + 4096, slice.remote().address());
            assertEquals(shared.remote().key(), slice.remote().key());
            assertThrows(IllegalArgumentException.class, () -> t.register(MemorySegment.ofArray(new byte[8])));
            assertThrows(IllegalArgumentException.class, () -> t.connection(0));
        }
    }

    @Test
    void freedRegionsAreReusedWithNewKeys() {
        try (ShmTransport t = group.transport(0, 1)) {
            RegisteredBuffer a = t.allocate(1000);
            RemoteBuffer ra = a.remote();
            a.close();
            a.close();
            RegisteredBuffer b = t.allocate(1000);
            assertEquals(ra.address(), b.remote().address(), "space is reused");
            assertNotEquals(ra.key(), b.remote().key(), "but under a new key");
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> t.usable(a, "source"));
            assertTrue(e.getMessage().contains("was closed"), e.getMessage());
            RegisteredBuffer big = t.allocate((64L << 20) + 1); // larger than a slab: its own file
            assertEquals((64L << 20) + 1, big.byteSize());
            assertNotEquals(ra.name(), big.remote().name());
        }
    }

    /**
     * A freed buffer's memory goes back to the shm directory (holes in its slab file) instead of
     * staying there until the transport closes; the neighbours sharing its first and last page
     * keep their bytes, and the space when reused gets memory again. A buffer whose descriptor
     * was handed out keeps its pages: a peer may still be copying into it, and a page faulted in
     * by that copy on a full tmpfs would be a SIGBUS in the peer's native copy.
     */
    @Test
    void aFreedBufferGivesItsMemoryBackToTheShmDirectory() throws Exception {
        long bytes = 16L << 20;
        try (ShmTransport t = group.transport(0, 1)) {
            RegisteredBuffer before = t.allocate(100);
            long base = allocatedKiB(group.shmDir);
            RegisteredBuffer big = t.allocate(bytes);
            RegisteredBuffer after = t.allocate(100);
            before.segment().fill((byte) 1);
            after.segment().fill((byte) 2);
            long grown = allocatedKiB(group.shmDir) - base;
            assertTrue(grown >= bytes >> 10, "the buffer took " + grown + " KiB");
            long freed = big.segment().address();
            big.close();
            long kept = allocatedKiB(group.shmDir) - base;
            assertTrue(kept < 1024, "the freed buffer still holds " + kept + " KiB of the shm directory");
            assertEquals(-1, before.segment().mismatch(MemorySegment.ofArray(new byte[100]).fill((byte) 1)));
            assertEquals(-1, after.segment().mismatch(MemorySegment.ofArray(new byte[100]).fill((byte) 2)));
            RegisteredBuffer again = t.allocate(bytes);
            assertEquals(freed, again.segment().address(), "the space is reused");
            assertTrue(allocatedKiB(group.shmDir) - base >= bytes >> 10, "and backed again");
            again.remote(); // handed out: peers may target it
            again.close();
            assertTrue(allocatedKiB(group.shmDir) - base >= bytes >> 10, "an exposed buffer keeps its pages");
        }
    }

    @Test
    void filesOfDeadProcessesAreReapedAtStart() throws Exception {
        Process p = new ProcessBuilder("true").start();
        p.waitFor();
        long deadPid = p.pid();
        Path stale = group.shmDir.resolve(ShmFiles.prefix("old", 3, deadPid) + "-ctl");
        Path staleSlab = group.shmDir.resolve(ShmFiles.prefix("old", 3, deadPid) + "-heap0");
        Path live = group.shmDir.resolve(ShmFiles.prefix("other", 0, ProcessHandle.current().pid()) + "-ctl");
        // another container sharing the directory (docker --ipc=host): its pids are not ours to judge
        Path otherNamespace = group.shmDir.resolve("rdma4j-old-n" + (ShmFiles.PID_NAMESPACE + 1) + "-r3-p" + deadPid
                + "-ctl");
        Path foreign = group.shmDir.resolve("not-ours");
        for (Path f : new Path[] {stale, staleSlab, live, otherNamespace, foreign}) {
            Files.write(f, new byte[1]);
        }
        try (ShmTransport t = group.transport(0, 1)) {
            assertFalse(Files.exists(stale));
            assertFalse(Files.exists(staleSlab));
            assertTrue(Files.exists(live), "a live process's file is kept");
            assertTrue(Files.exists(otherNamespace), "another pid namespace's file is kept");
            assertTrue(Files.exists(foreign), "files not named by rdma4j are never touched");
            assertTrue(Files.exists(t.controlFile()));
            assertTrue(t.controlFile().getFileName().toString().contains("-n" + ShmFiles.PID_NAMESPACE + "-r0-p"),
                    t.controlFile().toString());
        }
        Files.delete(live);
        Files.delete(otherNamespace);
        Files.delete(foreign);
        assertEquals(java.util.List.of(), group.leftovers());
    }

    /**
     * Files of another pid namespace (a container that shares the directory, or the earlier life of
     * a container restarted after it was killed) are reaped once their owner's lock is free, and
     * only if their header says the owner held it: the lock, not the pid, says the owner died.
     */
    @Test
    void anotherNamespacesFilesAreReapedOnceItsOwnersLockIsFree() throws Exception {
        String elsewhere = "rdma4j-gone-n" + (ShmFiles.PID_NAMESPACE + 1) + "-r0-p";
        Path locked = group.shmDir.resolve(elsewhere + "17-ctl");
        Path lockedSlab = group.shmDir.resolve(elsewhere + "17-heap0");
        Path neverLocked = group.shmDir.resolve(elsewhere + "18-ctl"); // its owner could not take the lock
        writeControlFile(locked, true);
        writeControlFile(neverLocked, false);
        Files.write(lockedSlab, new byte[1]);
        ControlLock owner = ControlLock.hold(locked); // the owner, alive: a descriptor of its own
        assertTrue(owner.held());
        try (ShmTransport t = group.transport(0, 1)) {
            assertTrue(Files.exists(locked), "a live owner's file is kept");
            assertTrue(Files.exists(lockedSlab));
        }
        owner.close(); // the owner died: the kernel lets go of its lock
        try (ShmTransport t = group.transport(0, 1)) {
            assertFalse(Files.exists(locked), "a dead owner's control file is reaped");
            assertFalse(Files.exists(lockedSlab), "and its slabs with it");
            assertTrue(Files.exists(neverLocked), "a file whose owner never held the lock is not judged by it");
        }
        Files.delete(neverLocked);
        assertEquals(java.util.List.of(), group.leftovers());
    }

    private static void writeControlFile(Path path, boolean ownerLocked) {
        ShmLayout layout = new ShmLayout(0, 1, 8, 16, 32, 3, 128, 16, 100, 8192);
        try (MappedFile file = MappedFile.create(path, ShmLayout.PAGE)) {
            layout.writeHeader(file.segment(), 99, ownerLocked);
        }
    }

    // ---------------------------------------------------------------- helpers

    /**
     * A rank's control file takes memory for its rings, window and region table, not for the
     * bounce chunks of every peer: 64 ranks on a host fit a container's /dev/shm. The chunks of
     * one peer get memory when a receive first offers that peer the bounce path.
     */
    @Test
    void theControlFileTakesMemoryForBounceChunksOnlyWhenAPeerMayWriteThem() throws Exception {
        try (ShmTransport alone = group.transport(0, 64)) {
            long kib = allocatedKiB(group.shmDir);
            assertTrue(kib < 16 << 10, "rank 0 of 64 occupies " + kib + " KiB of the shm directory");
        }
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        long before = allocatedKiB(group.shmDir);
        try (Arena arena = Arena.ofShared()) {
            RegisteredBuffer privateMemory = t[1].register(arena.allocate(1 << 20, 64));
            long r = t[1].connection(0).irecv(privateMemory, 0, 1 << 20, 4);
            long grown = allocatedKiB(group.shmDir) - before;
            assertTrue(grown >= (ShmTransport.CHUNK_COUNT * ShmTransport.CHUNK_BYTES) >> 10,
                    "the bounce chunks from rank 0 got memory: the directory grew by " + grown + " KiB");
            try (RegisteredBuffer source = t[0].allocate(1 << 20)) {
                fill(source.segment(), 0, 1 << 20, 3);
                long s = t[0].connection(1).isend(source, 0, 1 << 20, 4);
                runRanks(2, rank -> assertEquals(1 << 20, t[rank].await(rank == 0 ? s : r, TIMEOUT_NANOS)));
                assertEquals(-1, check(privateMemory.segment(), 0, 1 << 20, 3));
            }
        } finally {
            t[0].close();
            t[1].close();
        }
    }

    /** KiB the files in {@code dir} occupy (du), not their apparent size. */
    private static long allocatedKiB(java.nio.file.Path dir) throws Exception {
        Process du = new ProcessBuilder("du", "-sk", dir.toString()).redirectErrorStream(true).start();
        String out = new String(du.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.US_ASCII);
        assertEquals(0, du.waitFor(), out);
        return Long.parseLong(out.trim().split("\\s+")[0]);
    }

    /**
     * A write queued behind one whose immediate found the peer's ring full is copied only later:
     * if the peer freed the target meanwhile and a new buffer took its memory, the write fails
     * instead of landing there.
     */
    @Test
    void aQueuedWriteToARegionFreedMeanwhileFailsAndLeavesItsMemoryAlone() {
        int n = ShmTransport.IMMEDIATE_RING;
        ShmTransport a = new ShmTransport(group.config().toBuilder().maxOutstandingRequests(2 * n + 8).build(),
                group.store, 0, 2);
        ShmTransport b = group.transport(1, 2);
        try {
            Connection ab = a.connection(1);
            Connection ba = b.connection(0);
            RegisteredBuffer window = b.allocate(8);
            RegisteredBuffer target = b.allocate(4096);
            RegisteredBuffer src = a.allocate(4096);
            src.segment().fill((byte) 0x77);
            for (int i = 0; i <= n; i++) {
                ab.write(src, 0, window.remote(), 0, 8, i); // the last finds the immediate ring full
            }
            long w = ab.write(src, 0, target.remote(), 0, 4096, Connection.NO_IMMEDIATE);
            assertEquals(Transport.PENDING, a.test(w), "queued behind the full immediate ring");
            long freed = target.remote().address();
            target.close();
            RegisteredBuffer successor = b.allocate(4096);
            assertEquals(freed, successor.remote().address(), "the heap hands the freed memory out again");
            successor.segment().fill((byte) 0x11);
            waitImmediate(ba); // room in the ring: the queued writes go on
            TransportException e = assertThrows(TransportException.class, () -> a.await(w, TIMEOUT_NANOS));
            assertTrue(e.getMessage().contains("closed the remote buffer"), e.getMessage());
            for (long i = 0; i < 4096; i++) {
                assertEquals((byte) 0x11, successor.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
        } finally {
            a.close();
            b.close();
        }
    }

    static long waitImmediate(Connection c) {
        long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (true) {
            long imm = c.pollImmediate();
            if (imm != Connection.NO_IMMEDIATE) {
                return imm;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no immediate from rank " + c.peer());
            }
            Thread.onSpinWait();
        }
    }

    private static void assertGuards(MemorySegment s, long offset, long length) {
        for (long i = 0; i < offset; i++) {
            assertEquals(CANARY, s.get(ValueLayout.JAVA_BYTE, i), "guard byte before the target at " + i);
        }
        for (long i = offset + length; i < Math.min(s.byteSize(), offset + length + GUARD); i++) {
            assertEquals(CANARY, s.get(ValueLayout.JAVA_BYTE, i), "guard byte after the target at " + i);
        }
    }

    /**
     * A copy that fails inside progress (here: into memory confined to another thread than the
     * one that drives progress) fails the connection of the peer it came from, naming that peer,
     * and no other: rank 0 still gets rank 2's message, on the very thread whose progress pass met
     * the failure.
     */
    @Test
    void aCopyThatFailsInProgressFailsOnlyItsPeersConnection() throws Exception {
        ShmTransport[] t = {group.transport(0, 3), group.transport(1, 3), group.transport(2, 3)};
        CountDownLatch oneSent = new CountDownLatch(1);
        runRanks(3, rank -> {
            Transport me = t[rank];
            if (rank == 0) {
                try (Arena confined = Arena.ofConfined();
                     RegisteredBuffer shared = me.allocate(8)) {
                    RegisteredBuffer mine = me.register(confined.allocate(8));
                    long fromOne = me.connection(1).irecv(mine, 0, 8, 5);
                    long fromTwo = me.connection(2).irecv(shared, 0, 8, 5);
                    long[] got = new long[1];
                    Thread other = Thread.ofPlatform().start(() -> got[0] = me.await(fromTwo, TIMEOUT_NANOS));
                    other.join();
                    assertEquals(8, got[0], "rank 2's message arrived");
                    assertEquals(2, shared.segment().get(ValueLayout.JAVA_LONG_UNALIGNED, 0));
                    TransportException e = assertThrows(TransportException.class, () -> me.await(fromOne, TIMEOUT_NANOS));
                    assertEquals(1, e.peer(), e.toString());
                    mine.close();
                }
            } else {
                try (RegisteredBuffer b = me.allocate(8)) {
                    b.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, 0, rank);
                    if (rank == 2) { // after rank 1's message, so that the pass that finds this one met that one first
                        assertTrue(oneSent.await(60, TimeUnit.SECONDS));
                        assertEquals(8, me.await(me.connection(0).isend(b, 0, 8, 5), TIMEOUT_NANOS));
                    } else {
                        try {
                            me.await(me.connection(0).isend(b, 0, 8, 5), TIMEOUT_NANOS); // eager: done once it is out
                        } finally {
                            oneSent.countDown();
                        }
                        sleep(500);
                    }
                }
            }
        });
        closeAll(t);
    }

    /**
     * A connection that fails for a reason of this side's (here: a send buffer freed under its
     * pending send) tells the peer, whose receive from it then fails naming this rank instead of
     * waiting for the message until its timeout.
     */
    @Test
    void aConnectionDroppedOnOneSideFailsThePeersRequestsToo() throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        CountDownLatch dropped = new CountDownLatch(1);
        runRanks(2, rank -> {
            Transport me = t[rank];
            Connection c = me.connection(1 - rank);
            if (rank == 1) {
                RegisteredBuffer b = me.allocate(1 << 20);
                long pending = c.isend(b, 0, 1 << 20, 9); // waits for rank 0's receive, not posted yet
                b.close();
                assertThrows(TransportException.class, () -> me.await(pending, TIMEOUT_NANOS));
                dropped.countDown();
            } else {
                try (RegisteredBuffer b = me.allocate(1 << 20)) {
                    assertTrue(dropped.await(60, TimeUnit.SECONDS));
                    long start = System.nanoTime();
                    TransportException e = assertThrows(TransportException.class,
                            () -> me.await(c.irecv(b, 0, 1 << 20, 9), TimeUnit.SECONDS.toNanos(10)));
                    long ms = (System.nanoTime() - start) / 1_000_000;
                    assertFalse(e instanceof TransportTimeoutException, "waited out the timeout: " + e);
                    assertEquals(1, e.peer(), e.toString());
                    assertTrue(e.getMessage().contains("dropped its connection"), e.getMessage());
                    assertTrue(ms < 5000, "the receive failed " + ms + " ms after it was posted");
                }
            }
        });
        closeAll(t);
    }

    /**
     * A post of memory that its thread cannot reach (a confined arena of another thread) is
     * refused before it takes a request slot, and leaves no trace: rank 0 has one slot, which the
     * next post gets, and a refused receive publishes no CTS that would complete the peer's send
     * (and pair the peer's later messages of the tag with the receive before their own).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"isend", "irecv", "write", "read"})
    void aPostOfMemoryItsThreadCannotReachIsRefusedAndLeavesNoTrace(String op) throws Exception {
        ShmTransport a = new ShmTransport(group.config().toBuilder().maxOutstandingRequests(1).build(), group.store, 0, 2);
        ShmTransport b = group.transport(1, 2);
        try (Arena confined = Arena.ofConfined()) {
            Connection ab = a.connection(1);
            Connection ba = b.connection(0);
            RegisteredBuffer mine = a.register(confined.allocate(64));
            RegisteredBuffer shared = a.allocate(64);
            RegisteredBuffer theirs = b.allocate(64);
            RemoteBuffer target = theirs.remote();
            fill(shared.segment(), 0, 8, 1);
            fill(theirs.segment(), 0, 8, 2);
            Throwable refused = switch (op) {
                case "isend" -> {
                    Throwable e = thrownOnAnotherThread(() -> ab.isend(mine, 0, 8, 1));
                    long recv = ba.irecv(theirs, 8, 8, 1);
                    assertEquals(8, a.await(ab.isend(shared, 0, 8, 1), TIMEOUT_NANOS));
                    assertEquals(8, b.await(recv, TIMEOUT_NANOS));
                    assertEquals(-1, check(theirs.segment(), 8, 8, 1));
                    yield e;
                }
                case "irecv" -> {
                    long send = ba.isend(theirs, 0, 8, 1); // eager: here before any receive
                    awaitOneEarlyMessage(a, ab);
                    Throwable e = thrownOnAnotherThread(() -> ab.irecv(mine, 0, 64, 1));
                    ab.flush(); // a pass, which would publish the refused receive's CTS
                    assertEquals(Transport.PENDING, b.test(send), "no receive has taken the message yet");
                    assertEquals(8, a.await(ab.irecv(shared, 8, 8, 1), TIMEOUT_NANOS));
                    assertEquals(-1, check(shared.segment(), 8, 8, 2));
                    assertEquals(8, b.await(send, TIMEOUT_NANOS));
                    yield e;
                }
                case "write" -> {
                    Throwable e = thrownOnAnotherThread(() -> ab.write(mine, 0, target, 8, 8, Connection.NO_IMMEDIATE));
                    assertEquals(8, a.await(ab.write(shared, 0, target, 8, 8, Connection.NO_IMMEDIATE), TIMEOUT_NANOS));
                    assertEquals(-1, check(theirs.segment(), 8, 8, 1));
                    yield e;
                }
                default -> {
                    Throwable e = thrownOnAnotherThread(() -> ab.read(mine, 0, target, 0, 8));
                    assertEquals(8, a.await(ab.read(shared, 8, target, 0, 8), TIMEOUT_NANOS));
                    assertEquals(-1, check(shared.segment(), 8, 8, 2));
                    yield e;
                }
            };
            assertInstanceOf(IllegalArgumentException.class, refused, "refused before it took a slot");
            assertTrue(refused.getMessage().contains("confined arena of another thread"), refused.getMessage());
        } finally {
            a.close();
            b.close();
        }
    }

    /** What {@code post} threw on a thread of its own; it must throw. */
    private static Throwable thrownOnAnotherThread(Runnable post) throws InterruptedException {
        Throwable[] thrown = new Throwable[1];
        Thread.ofPlatform().start(() -> {
            try {
                post.run();
            } catch (Throwable e) {
                thrown[0] = e;
            }
        }).join();
        assertNotNull(thrown[0], "the post was accepted");
        return thrown[0];
    }

    /**
     * A post that throws after taking its request slot for a reason other than the caller's
     * memory (here: the peer corrupted the consumer counter of the CTS ring, which the post
     * publishes into) drops the connection, as a progress pass would, and frees its slot.
     */
    @Test
    void aPostThatMeetsACorruptRingDropsTheConnectionAndFreesItsSlot() throws Exception {
        int slots = ShmTransport.CTS_RING + 1;
        ShmTransport a = new ShmTransport(group.config().toBuilder().maxOutstandingRequests(slots).build(), group.store, 0, 3);
        ShmTransport[] t = {a, group.transport(1, 3), group.transport(2, 3)};
        Connection toOne = a.connection(1);
        RegisteredBuffer buf = a.allocate(8);
        long[] filling = new long[ShmTransport.CTS_RING];
        for (int i = 0; i < filling.length; i++) {
            filling[i] = toOne.irecv(buf, 0, 8, 1); // rank 1 takes none of their CTS entries: the ring fills
        }
        // the ring's consumer counter, first in the ring (SpscRing), far ahead of the entries written
        tamper(a, (control, layout) -> control.set(ValueLayout.JAVA_LONG, layout.area(1) + layout.ctsRingOffset, 1L << 40));
        TransportException e = assertThrows(TransportException.class, () -> toOne.irecv(buf, 0, 8, 1));
        assertEquals(1, e.peer());
        assertTrue(e.getMessage().contains("corrupted"), e.getMessage());
        for (long id : filling) {
            assertThrows(TransportException.class, () -> a.test(id), "failed with the connection");
        }
        Connection toTwo = a.connection(2);
        for (int i = 0; i < slots; i++) {
            toTwo.irecv(buf, 0, 8, 1); // every slot is free again
        }
        closeAll(t);
    }

    /**
     * A region table entry that a corrupt or hostile peer wrote so that a descriptor's bytes lie
     * before its slab, or past the end of the address space, is refused naming the peer, as any
     * region it has not registered is, instead of failing the copy.
     */
    @ParameterizedTest(name = "address {0}")
    @ValueSource(longs = {-4096, Long.MAX_VALUE - 4})
    void aRegionOutsideItsSlabIsRefusedNamingThePeer(long address) throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        Connection c = t[0].connection(1);
        RegisteredBuffer local = t[0].allocate(64);
        String slab = t[1].allocate(64).remote().name(); // the slab the forged region claims to lie in
        int index = ShmTransport.REGION_CAPACITY - 1;
        long key = RegionTable.key(index, 1);
        tamper(t[1], (control, layout) -> new RegionTable(control, layout).publish(index, key, 0, address, 4096));
        RemoteBuffer forged = new RemoteBuffer(1, address, 4096, key, slab);
        TransportException w = assertThrows(TransportException.class,
                () -> c.write(local, 0, forged, 0, 64, Connection.NO_IMMEDIATE));
        assertEquals(1, w.peer(), w.getMessage());
        TransportException r = assertThrows(TransportException.class, () -> c.read(local, 0, forged, 0, 64));
        assertEquals(1, r.peer(), r.getMessage());
        closeAll(t);
    }

    /** Writes into {@code t}'s control file as a corrupt or hostile peer could: {@code edit} gets its mapping and layout. */
    private static void tamper(ShmTransport t, BiConsumer<MemorySegment, ShmLayout> edit) throws IOException {
        try (MappedFile control = MappedFile.open(t.controlFile())) {
            MemorySegment file = control.segment();
            edit.accept(file, ShmLayout.readHeader(file, t.rank(), t.size(), "the control file of rank " + t.rank()));
        }
    }

    /**
     * close() waits for a running poll (it takes the lock that every poll holds) instead of
     * unmapping memory under its copy, and an await that polls on afterwards fails as closed.
     */
    @Test
    void closeWaitsForARunningPollAndItsWaiterFailsAsClosed() throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        long id = t[0].connection(1).irecv(t[0].allocate(8), 0, 8, 1); // never sent
        Throwable[] waited = new Throwable[1];
        Thread waiter = Thread.ofPlatform().start(() -> {
            try {
                t[0].await(id, TIMEOUT_NANOS);
            } catch (Throwable e) {
                waited[0] = e;
            }
        });
        Thread closer;
        synchronized (t[0]) { // as a poll holds it
            closer = Thread.ofPlatform().start(t[0]::close);
            closer.join(300);
            assertTrue(closer.isAlive(), "close went on while a poll held the transport");
        }
        closer.join();
        waiter.join();
        assertInstanceOf(TransportException.class, waited[0]);
        assertTrue(waited[0].getMessage().contains("closed"), waited[0].getMessage());
        assertThrows(TransportException.class, () -> t[0].allocate(1));
        closeAll(t);
    }

    private void closeAll(ShmTransport[] t) {
        for (ShmTransport x : t) {
            x.close();
        }
        assertEquals(java.util.List.of(), group.leftovers(), "files left in the shm directory");
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
