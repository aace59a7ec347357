package io.rdma4j.transport.conformance;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.TransportTimeoutException;
import io.rdma4j.transport.Transports;
import io.rdma4j.transport.bootstrap.FileStore;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.testing.LocalGroup;
import io.rdma4j.transport.testing.RankProcesses;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The provider conformance suite, written once: every provider must pass it unchanged. A provider
 * joins by a subclass that names it ({@link TcpConformanceTest}, {@link ShmConformanceTest}).
 * Two ranks run as threads of this JVM (each with its own store client and transport), except
 * the peer-death test, whose peer is a separate JVM that is killed.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class TransportConformanceTest {
    static final Duration RUN = Duration.ofSeconds(40);
    static final long WAIT = TimeUnit.SECONDS.toNanos(20);
    static final long DEATH_DETECTION_SECONDS = 5;
    /**
     * How much longer budgets that include starting JVMs get in the Soft-RoCE guest, where the
     * emulated CPU starts a JVM and binds the verbs library ten times slower than a host does.
     */
    static final int STARTUP_SCALE = "1".equals(System.getenv("SOFTROCE_VM")) ? 4 : 1; // as SoftRoce.inGuest(), which ranks in child JVMs cannot load

    protected abstract TransportConfig.Provider provider();

    private LocalGroup group;

    @BeforeEach
    void startGroup() {
        group = LocalGroup.start(2, LocalGroup.config(provider()));
        assertEquals(provider().name().toLowerCase(), group.transport(0).provider());
    }

    @AfterEach
    void closeGroup() {
        if (group != null) {
            group.close();
        }
    }

    // ---- Data patterns.

    static byte pattern(long i, int seed) {
        return (byte) (i * 31 + seed + (i >>> 9) * 7);
    }

    /**
     * Chunk of the bulk fill and check: the pattern is computed in a heap array and copied, because
     * a per-byte segment access runs at C1 speed in the Soft-RoCE guest (C1 only, under TCG),
     * where filling 64 MiB byte by byte took 14 s.
     */
    private static final int CHUNK = 64 << 10;

    static void fill(MemorySegment s, long offset, long length, int seed) {
        byte[] chunk = new byte[(int) Math.min(CHUNK, Math.max(1, length))];
        for (long at = 0; at < length; at += chunk.length) {
            int n = (int) Math.min(chunk.length, length - at);
            for (int j = 0; j < n; j++) {
                chunk[j] = pattern(at + j, seed);
            }
            MemorySegment.copy(chunk, 0, s, ValueLayout.JAVA_BYTE, offset + at, n);
        }
    }

    /** Asserts {@code s[offset, offset+length)} holds pattern {@code seed}, naming the first bad byte. */
    static void check(MemorySegment s, long offset, long length, int seed) {
        byte[] chunk = new byte[(int) Math.min(CHUNK, Math.max(1, length))];
        for (long at = 0; at < length; at += chunk.length) {
            int n = (int) Math.min(chunk.length, length - at);
            MemorySegment.copy(s, ValueLayout.JAVA_BYTE, offset + at, chunk, 0, n);
            for (int j = 0; j < n; j++) {
                if (chunk[j] != pattern(at + j, seed)) {
                    fail("byte " + (at + j) + " of " + length + " is " + chunk[j] + ", expected " + pattern(at + j, seed));
                }
            }
        }
    }

    static void checkFilled(MemorySegment s, long offset, long length, byte value) {
        for (long i = 0; i < length; i++) {
            if (s.get(ValueLayout.JAVA_BYTE, offset + i) != value) {
                fail("byte at " + (offset + i) + " was overwritten: " + s.get(ValueLayout.JAVA_BYTE, offset + i));
            }
        }
    }

    /** Returns once both ranks of the pair have arrived at {@code key}. */
    static void rendezvous(io.rdma4j.transport.bootstrap.Store store, String key) throws InterruptedException {
        store.add(key, 1);
        long deadline = System.nanoTime() + WAIT;
        while (Long.parseLong(new String(store.get(key, Duration.ofSeconds(20)))) < 2) {
            if (System.nanoTime() - deadline > 0) {
                fail("the peer did not reach '" + key + "' within " + WAIT / 1_000_000 + " ms");
            }
            Thread.sleep(1);
        }
    }

    static void publish(Transport t, String key, RemoteBuffer b, io.rdma4j.transport.bootstrap.Store store) {
        store.set(key, b.toBytes());
    }

    static RemoteBuffer lookup(io.rdma4j.transport.bootstrap.Store store, String key) {
        return RemoteBuffer.fromBytes(store.get(key, Duration.ofSeconds(20)));
    }

    // ---- Two-sided.

    @ParameterizedTest(name = "{0} bytes")
    @ValueSource(longs = {0, 1, 4095, (1 << 20) + 3, 64L << 20})
    void sendRecvKeepsEveryByte(long size) throws Exception {
        long canary = 64;
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            // Both sides prepare their buffers first, so that the receiver's wait times the transfer,
            // not the sender's fill (in the Soft-RoCE guest that fill once took most of the wait).
            if (rank == 0) {
                try (RegisteredBuffer src = t.allocate(size + 16)) {
                    fill(src.segment(), 16, size, 5);
                    rendezvous(store, "send-recv-" + size);
                    assertEquals(size, t.await(c.isend(src, 16, size, 3), WAIT));
                }
            } else {
                try (RegisteredBuffer dst = t.allocate(size + 2 * canary)) {
                    dst.segment().fill((byte) 0x5A);
                    rendezvous(store, "send-recv-" + size);
                    assertEquals(size, t.await(c.irecv(dst, canary, size + canary, 3), WAIT));
                    check(dst.segment(), canary, size, 5);
                    checkFilled(dst.segment(), 0, canary, (byte) 0x5A);
                    checkFilled(dst.segment(), canary + size, canary, (byte) 0x5A);
                }
            }
        });
    }

    @Test
    void registeredCallerMemoryWorksAsSourceAndTarget() throws Exception {
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            try (Arena arena = Arena.ofShared()) {
                MemorySegment mem = arena.allocate(10_000);
                RegisteredBuffer b = t.register(mem);
                assertSame(b, t.register(mem), "registration is cached");
                if (rank == 0) {
                    fill(mem, 0, 10_000, 9);
                    assertEquals(10_000, t.await(c.isend(b, 0, 10_000, 0), WAIT));
                } else {
                    assertEquals(10_000, t.await(c.irecv(b, 0, 10_000, 0), WAIT));
                    check(mem, 0, 10_000, 9);
                }
                // Both sides must be done before the memory goes away.
                rendezvous(store, "registered-done");
            }
        });
    }

    @Test
    void aRegistrationOfFreedMemoryIsNotReusedForItsAddress() throws Exception {
        group.run(RUN, (rank, t, store) -> {
            try (Arena first = Arena.ofShared(); Arena second = Arena.ofShared()) {
                MemorySegment mem = first.allocate(4096);
                RegisteredBuffer old = t.register(mem);
                // The same address and size under another scope stands for memory freed and
                // allocated again at the same place: the cached registration is stale.
                MemorySegment again = mem.reinterpret(second, null);
                RegisteredBuffer fresh = t.register(again);
                assertNotSame(old, fresh, "a registration made for other (freed) memory was returned");
                assertSame(second.scope(), fresh.segment().scope());
                assertSame(fresh, t.register(again), "the new registration is cached");
            }
        });
    }

    @Test
    void messagesOfOneTagArriveInOrderSentEvenWhenSendsComeFirst() throws Exception {
        int n = 200;
        CountDownLatch sent = new CountDownLatch(1);
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            try (RegisteredBuffer b = t.allocate(n * 8L)) {
                long[] ids = new long[n];
                if (rank == 0) {
                    for (int i = 0; i < n; i++) {
                        b.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, i * 8L, 1000 + i);
                        ids[i] = c.isend(b, i * 8L, 8, 11);
                    }
                    c.flush();
                    sent.countDown();
                    for (long id : ids) {
                        assertEquals(8, t.await(id, WAIT));
                    }
                } else {
                    assertTrue(sent.await(20, TimeUnit.SECONDS));
                    for (int i = 0; i < n; i++) {
                        ids[i] = c.irecv(b, i * 8L, 8, 11);
                    }
                    for (long id : ids) {
                        assertEquals(8, t.await(id, WAIT));
                    }
                    for (int i = 0; i < n; i++) {
                        assertEquals(1000 + i, b.segment().get(ValueLayout.JAVA_LONG_UNALIGNED, i * 8L), "message " + i);
                    }
                }
            }
        });
    }

    @Test
    void receivesMatchTheirTagNotTheArrivalOrder() throws Exception {
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            try (RegisteredBuffer b = t.allocate(4096)) {
                if (rank == 0) {
                    fill(b.segment(), 0, 100, 1);
                    fill(b.segment(), 1000, 300, 2);
                    fill(b.segment(), 2000, 50, 3);
                    long s1 = c.isend(b, 0, 100, 1);
                    long s2 = c.isend(b, 1000, 300, 2);
                    store.get("recv-tag-3-posted", Duration.ofSeconds(20));
                    long s3 = c.isend(b, 2000, 50, 3);
                    assertEquals(100, t.await(s1, WAIT));
                    assertEquals(300, t.await(s2, WAIT));
                    assertEquals(50, t.await(s3, WAIT));
                } else {
                    long r3 = c.irecv(b, 2000, 1000, 3); // posted first, matched last
                    c.flush();
                    store.set("recv-tag-3-posted", new byte[0]);
                    long r2 = c.irecv(b, 1000, 1000, 2);
                    long r1 = c.irecv(b, 0, 1000, 1);
                    assertEquals(300, t.await(r2, WAIT));
                    assertEquals(100, t.await(r1, WAIT));
                    assertEquals(50, t.await(r3, WAIT));
                    check(b.segment(), 0, 100, 1);
                    check(b.segment(), 1000, 300, 2);
                    check(b.segment(), 2000, 50, 3);
                }
            }
        });
    }

    /** A send never lands before its receive is posted, however long the receiver takes. */
    @Test
    void aSlowReceiverIsNeverOverrun() throws Exception {
        int n = 16;
        long size = 256 << 10;
        CountDownLatch observed = new CountDownLatch(1);
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            try (RegisteredBuffer b = t.allocate(n * size)) {
                long[] ids = new long[n];
                if (rank == 0) {
                    for (int i = 0; i < n; i++) {
                        fill(b.segment(), i * size, size, i);
                        ids[i] = c.isend(b, i * size, size, 4);
                    }
                    // The receiver has posted nothing: no send may complete, however long we poll.
                    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
                    while (System.nanoTime() - until < 0) {
                        for (long id : ids) {
                            assertEquals(Transport.PENDING, t.test(id), "a send completed with no receive posted");
                        }
                    }
                    observed.countDown();
                    for (long id : ids) {
                        assertEquals(size, t.await(id, WAIT));
                    }
                } else {
                    assertTrue(observed.await(20, TimeUnit.SECONDS));
                    for (int i = 0; i < n; i++) {
                        Thread.sleep(10); // slow consumer: one buffer at a time
                        assertEquals(size, t.await(c.irecv(b, i * size, size, 4), WAIT));
                        check(b.segment(), i * size, size, i);
                    }
                }
            }
        });
    }

    /**
     * Large and small messages posted back to back, all in flight at once, arrive intact and in
     * order: a stream provider that reads large payloads straight into their target must find the
     * small frames between them again.
     */
    @Test
    void mixedSizesBackToBackArriveIntact() throws Exception {
        long[] sizes = {(256 << 10) + 7, 100, 0, (1 << 20) + 3, 40, 70_000, 65_536, 1, (256 << 10) - 5, 8};
        long[] offsets = new long[sizes.length];
        long total = 0;
        for (int i = 0; i < sizes.length; i++) {
            offsets[i] = total;
            total += sizes[i] + 64;
        }
        long bytes = total;
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            try (RegisteredBuffer b = t.allocate(bytes)) {
                long[] ids = new long[sizes.length];
                for (int round = 0; round < 3; round++) {
                    for (int i = 0; i < sizes.length; i++) {
                        if (rank == 0) {
                            fill(b.segment(), offsets[i], sizes[i], i + round);
                            ids[i] = c.isend(b, offsets[i], sizes[i], 11);
                        } else {
                            ids[i] = c.irecv(b, offsets[i], sizes[i] + 64, 11);
                        }
                    }
                    for (int i = 0; i < sizes.length; i++) {
                        assertEquals(sizes[i], t.await(ids[i], WAIT), "message " + i + " of round " + round);
                        if (rank == 1) {
                            check(b.segment(), offsets[i], sizes[i], i + round);
                        }
                    }
                }
            }
        });
    }

    @Test
    void aSendLargerThanTheReceiveFailsBoth() throws Exception {
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            try (RegisteredBuffer b = t.allocate(1024)) {
                long id = rank == 0 ? c.isend(b, 0, 1000, 6) : c.irecv(b, 0, 10, 6);
                TransportException e = assertThrows(TransportException.class, () -> t.await(id, WAIT));
                assertEquals(1 - rank, e.peer());
            }
        });
    }

    // ---- One-sided.

    @ParameterizedTest(name = "{0} bytes")
    @ValueSource(longs = {0, 1, 4095, (1 << 20) + 3})
    void writeWithImmediateIsVisibleWhenTheImmediateArrives(long size) throws Exception {
        long immediate = 0xCAFEBABEL; // above 2^31: unsigned
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            if (rank == 0) {
                RemoteBuffer target = lookup(store, "target");
                try (RegisteredBuffer src = t.allocate(size)) {
                    fill(src.segment(), 0, size, 7);
                    assertEquals(size, t.await(c.write(src, 0, target, 100, size, immediate), WAIT));
                }
            } else {
                try (RegisteredBuffer dst = t.allocate(size + 200)) {
                    dst.segment().fill((byte) 0x33);
                    store.set("target", dst.remote().toBytes());
                    long got = awaitImmediate(c);
                    assertEquals(immediate, got);
                    check(dst.segment(), 100, size, 7);
                    checkFilled(dst.segment(), 0, 100, (byte) 0x33);
                    checkFilled(dst.segment(), 100 + size, 100, (byte) 0x33);
                }
            }
        });
    }

    static long awaitImmediate(Connection c) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT;
        long v;
        while ((v = c.pollImmediate()) == Connection.NO_IMMEDIATE) {
            if (System.nanoTime() - deadline > 0) {
                fail("no immediate from peer " + c.peer());
            }
            Thread.onSpinWait();
        }
        return v;
    }

    @Test
    void writesAndTheirImmediatesStayInOrder() throws Exception {
        int n = 100;
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            try (RegisteredBuffer b = t.allocate(n * 8L)) {
                if (rank == 0) {
                    RemoteBuffer target = lookup(store, "slots");
                    List<Long> ids = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        b.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, i * 8L, 7000 + i);
                        ids.add(c.write(b, i * 8L, target, i * 8L, 8, i));
                    }
                    for (long id : ids) {
                        assertEquals(8, t.await(id, WAIT));
                    }
                } else {
                    store.set("slots", b.remote().toBytes());
                    for (int i = 0; i < n; i++) {
                        assertEquals(i, awaitImmediate(c));
                        assertEquals(7000 + i, b.segment().get(ValueLayout.JAVA_LONG_UNALIGNED, i * 8L), "slot " + i);
                    }
                    assertEquals(Connection.NO_IMMEDIATE, c.pollImmediate());
                }
            }
        });
    }

    /**
     * Values of writes that arrived before the peer closed are still the application's: taken in
     * order after the connection failed, then the failure is reported.
     */
    @Test
    void immediatesThatArrivedBeforeThePeerClosedAreStillTaken() throws Exception {
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            try (RegisteredBuffer b = t.allocate(24)) {
                if (rank == 0) {
                    RemoteBuffer target = lookup(store, "slots");
                    for (int i = 0; i < 3; i++) {
                        assertEquals(8, t.await(c.write(b, 8L * i, target, 8L * i, 8, 40 + i), WAIT));
                    }
                    store.set("written", new byte[1]);
                    store.get("first taken", Duration.ofSeconds(30L * STARTUP_SCALE));
                    t.close();
                } else {
                    store.set("slots", b.remote().toBytes());
                    long closed = c.irecv(b, 0, 8, 99); // fails once the peer closed
                    store.get("written", Duration.ofSeconds(30L * STARTUP_SCALE));
                    assertEquals(40, awaitImmediate(c), "the first value, taken while the peer is open");
                    store.set("first taken", new byte[1]);
                    assertThrows(TransportException.class, () -> t.await(closed, WAIT));
                    assertEquals(41, c.pollImmediate(), "a value that arrived before the peer closed");
                    assertEquals(42, c.pollImmediate());
                    assertThrows(TransportException.class, c::pollImmediate, "then the connection's failure");
                }
            }
        });
    }

    @ParameterizedTest(name = "{0} bytes")
    @ValueSource(longs = {0, 1, 4095, (1 << 20) + 3})
    void readFetchesThePeersBytes(long size) throws Exception {
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            if (rank == 0) {
                RemoteBuffer source = lookup(store, "source");
                try (RegisteredBuffer dst = t.allocate(size + 8)) {
                    assertEquals(size, t.await(c.read(dst, 8, source, 3, size), WAIT));
                    check(dst.segment(), 8, size, 8);
                }
                store.set("read-done", new byte[0]);
            } else {
                try (RegisteredBuffer src = t.allocate(size + 3)) {
                    fill(src.segment(), 3, size, 8);
                    store.set("source", src.remote().toBytes());
                    // Serve the read: keep the transport progressing until the reader is done.
                    long r = c.irecv(src, 0, 0, 99);
                    while (true) {
                        try {
                            store.get("read-done", Duration.ofMillis(1));
                            break;
                        } catch (TransportTimeoutException notYet) {
                            assertEquals(Transport.PENDING, t.test(r));
                        }
                    }
                    t.abort(new TransportException(-1, "test over"));
                }
            }
        });
    }

    @Test
    void badArgumentsAreRejectedClearly() throws Exception {
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            try (RegisteredBuffer b = t.allocate(100)) {
                assertThrows(IllegalArgumentException.class, () -> c.isend(b, 90, 20, 0));
                assertThrows(IllegalArgumentException.class, () -> c.irecv(b, -1, 5, 0));
                assertThrows(IllegalArgumentException.class, () -> t.connection(rank));
                assertThrows(IllegalArgumentException.class, () -> t.connection(2));
                RemoteBuffer mine = b.remote();
                RemoteBuffer theirs = new RemoteBuffer(1 - rank, mine.address(), 100, mine.key(), mine.name());
                assertThrows(IllegalArgumentException.class, () -> c.write(b, 0, theirs, 50, 51, Connection.NO_IMMEDIATE));
                assertThrows(IllegalArgumentException.class, () -> c.read(b, 0, theirs, 101, 0));
                assertThrows(IllegalArgumentException.class, () -> c.write(b, 0, mine, 0, 1, Connection.NO_IMMEDIATE),
                        "a descriptor of another rank's memory");
                assertThrows(IllegalArgumentException.class, () -> t.register(MemorySegment.ofArray(new byte[8])));
            }
        });
    }

    /**
     * A read-only view as the target of a receive or read is refused when posted, and the
     * connection stays usable (a copy into it, attempted later inside progress, used to fail
     * there: on shm that failure jammed every later progress pass of the transport). A writable
     * view of the same memory registered afterwards is a registration of its own that receives
     * (the cache used to hand it the read-only view registered first).
     */
    @Test
    void aReadOnlyTargetIsRefusedWhenPostedAndTheConnectionStaysUsable() throws Exception {
        group.run(RUN, (rank, t, store) -> {
            Connection c = t.connection(1 - rank);
            try (Arena arena = Arena.ofShared();
                 RegisteredBuffer b = t.allocate(8)) {
                MemorySegment memory = arena.allocate(64);
                RegisteredBuffer readOnly = t.register(memory.asReadOnly());
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.irecv(readOnly, 0, 8, 0));
                assertTrue(e.getMessage().contains("read-only"), e.getMessage());
                e = assertThrows(IllegalArgumentException.class, () -> c.read(readOnly, 0, b.remote(), 0, 8));
                assertTrue(e.getMessage().contains("read-only"), e.getMessage());
                RegisteredBuffer writable = t.register(memory);
                assertFalse(writable.segment().isReadOnly(), "the writable view's registration");
                assertSame(writable, t.register(memory), "cached");
                assertSame(readOnly, t.register(memory.asReadOnly()), "cached");
                if (rank == 0) {
                    b.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 0x5eed);
                    assertEquals(8, t.await(c.isend(b, 0, 8, 0), WAIT));
                    memory.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 0xabc);
                    assertEquals(8, t.await(c.isend(readOnly, 0, 8, 1), WAIT)); // a read-only view sends
                } else {
                    assertEquals(8, t.await(c.irecv(writable, 8, 8, 0), WAIT));
                    assertEquals(0x5eed, memory.get(ValueLayout.JAVA_LONG_UNALIGNED, 8));
                    assertEquals(8, t.await(c.irecv(writable, 16, 8, 1), WAIT));
                    assertEquals(0xabc, memory.get(ValueLayout.JAVA_LONG_UNALIGNED, 16));
                }
                readOnly.close();
                writable.close();
            }
        });
    }

    // ---- Faults.

    @Test
    void aWaitTimesOutNamingThePeer() throws Exception {
        Transport t = group.transport(0);
        group.connectAll(RUN);
        try (RegisteredBuffer b = t.allocate(8)) {
            long id = t.connection(1).irecv(b, 0, 8, 1);
            TransportTimeoutException e = assertThrows(TransportTimeoutException.class,
                    () -> t.await(id, TimeUnit.MILLISECONDS.toNanos(200)));
            assertEquals(1, e.peer());
            assertTrue(e.getMessage().contains("peer 1"), e.getMessage());
        }
    }

    @Test
    void abortUnblocksAWaiter() throws Exception {
        Transport t = group.transport(0);
        group.connectAll(RUN);
        RegisteredBuffer b = t.allocate(8);
        long id = t.connection(1).irecv(b, 0, 8, 1);
        Thread aborter = new Thread(() -> {
            try {
                Thread.sleep(200);
            } catch (InterruptedException ignored) {
                return;
            }
            t.abort(new IllegalStateException("rank 1 gave up"));
        });
        aborter.start();
        long start = System.nanoTime();
        assertThrows(TransportException.class, () -> t.await(id, WAIT));
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10));
        aborter.join();
        assertThrows(TransportException.class, () -> t.connection(1).irecv(b, 0, 8, 1), "operations after abort fail");
    }

    /** A rank waiting for a peer that never connects is released by abort, not only by its timeout. */
    @Test
    void abortUnblocksAConnectionWait() throws Exception {
        Transport t = group.transport(1); // rank 0 never asks for this connection
        Throwable[] outcome = new Throwable[1];
        Thread waiter = new Thread(() -> {
            try {
                t.connection(0);
            } catch (Throwable e) {
                outcome[0] = e;
            }
        });
        waiter.start();
        Thread.sleep(200);
        t.abort(new IllegalStateException("job cancelled"));
        waiter.join(10_000);
        assertTrue(!waiter.isAlive(), "connection() still blocked 10 s after abort");
        if (outcome[0] != null) {
            assertTrue(outcome[0] instanceof TransportException, "unexpected " + outcome[0]);
        }
    }

    /**
     * A peer that never started its transport: connecting to it waits for what it would publish
     * in the store, and that wait ends at once on abort and, at the timeout, names the peer.
     */
    @Test
    void aConnectionToAPeerThatNeverStartedNamesThePeerOnTimeout(@TempDir Path dir) {
        TransportConfig quick = LocalGroup.config(provider()).toBuilder().timeout(Duration.ofMillis(1500)).build();
        try (Store store = new FileStore(dir);
             Transport alone = Transports.create(quick, store, 0, 2)) { // rank 1 never starts
            TransportException timedOut = assertThrows(TransportException.class, () -> alone.connection(1));
            assertEquals(1, timedOut.peer(), timedOut.toString());
        }
    }

    /** {@link #aConnectionToAPeerThatNeverStartedNamesThePeerOnTimeout}: the wait ends on abort, not at the timeout (20 s). */
    @Test
    void aConnectionToAPeerThatNeverStartedEndsOnAbort(@TempDir Path dir) throws Exception {
        try (Store store = new FileStore(dir);
             Transport alone = Transports.create(LocalGroup.config(provider()), store, 0, 2)) {
            Throwable[] outcome = new Throwable[1];
            Thread waiter = Thread.ofPlatform().start(() -> {
                try {
                    alone.connection(1);
                } catch (Throwable e) {
                    outcome[0] = e;
                }
            });
            Thread.sleep(300);
            alone.abort(new IllegalStateException("job cancelled"));
            long start = System.nanoTime();
            waiter.join(10_000);
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertFalse(waiter.isAlive(), "connection() still blocked 10 s after abort");
            assertTrue(ms < 2000L * STARTUP_SCALE, "connection() ended " + ms + " ms after the abort returned");
            assertTrue(outcome[0] instanceof TransportException, "unexpected " + outcome[0]);
        }
    }

    /**
     * The end of a program: a peer closes right after its last receive. The send it received
     * completes here (on verbs its acknowledgement and the receive's CTS may arrive only after the
     * peer's close began); a receive it never served and a send it never took fail, naming it,
     * by detection rather than by timeout. The message is in the peer's memory before its receive
     * is posted, so the receive completes in the same pass that queues its CTS, and the close
     * follows at once. Three rounds, each with a fresh pair of transports.
     */
    @Test
    void aPeerClosingRightAfterItsLastReceiveCompletesTheSendItTook() throws Exception {
        for (int round = 0; round < 3; round++) {
            closeGroup();
            group = LocalGroup.start(2, LocalGroup.config(provider()));
            int seed = round;
            group.run(RUN, (rank, t, store) -> {
                Connection c = t.connection(1 - rank);
                RegisteredBuffer b = t.allocate(64);
                if (rank == 0) {
                    fill(b.segment(), 0, 32, seed);
                    long neverSent = c.irecv(b, 32, 32, 2);
                    long neverTaken = c.isend(b, 0, 16, 3);
                    long taken = c.isend(b, 0, 32, 1);
                    c.flush();
                    store.set("sent-" + seed, new byte[0]);
                    assertEquals(32, t.await(taken, WAIT), "the send the peer received before it closed");
                    for (long id : new long[] {neverSent, neverTaken}) {
                        TransportException e = assertThrows(TransportException.class, () -> t.await(id, WAIT));
                        assertEquals(1, e.peer(), e.getMessage());
                        assertTrue(e.getMessage().contains("peer 1"), e.getMessage());
                        assertTrue(!(e instanceof TransportTimeoutException), "failed by detection, not by timeout: " + e);
                    }
                } else {
                    store.get("sent-" + seed, Duration.ofSeconds(20));
                    Thread.sleep(20); // the message lands without this side's help (ring, socket buffer)
                    long recv = c.irecv(b, 0, 64, 1);
                    assertEquals(32, t.await(recv, WAIT));
                    check(b.segment(), 0, 32, seed);
                    t.close();
                }
            });
        }
    }

    /**
     * Closing an allocated buffer under a pending send fails its connection: the peer may hold
     * that send's CTS already, so no later send or receive of the connection could pair right.
     */
    @Test
    void closingTheBufferOfAPendingSendFailsItsConnection() throws Exception {
        Transport t = group.transport(0);
        group.connectAll(RUN);
        Connection c = t.connection(1);
        RegisteredBuffer big = t.allocate(1 << 20);
        long pending = c.isend(big, 0, 1 << 20, 1); // no receive is posted: it waits
        big.close();
        assertThrows(TransportException.class, () -> t.await(pending, WAIT));
        try (RegisteredBuffer small = t.allocate(64)) {
            for (int tag = 2; tag <= 3; tag++) {
                int k = tag;
                TransportException e = assertThrows(TransportException.class, () -> t.await(c.isend(small, 0, 8, k), WAIT));
                assertTrue(e.getMessage().contains("no longer pair up"), e.getMessage());
            }
        }
    }

    /**
     * A receive whose buffer was closed while it was pending fails, and its message never lands
     * in the memory that a later allocation took.
     */
    @Test
    void aReceiveWhoseBufferWasClosedNeverWritesTheMemoryThatReusedIt() throws Exception {
        group.connectAll(RUN);
        Transport receiver = group.transport(1);
        RegisteredBuffer old = receiver.allocate(64);
        long pending = receiver.connection(0).irecv(old, 0, 64, 5);
        old.close();
        try (RegisteredBuffer reused = receiver.allocate(64);
             RegisteredBuffer source = group.transport(0).allocate(16)) {
            reused.segment().fill((byte) 0x11);
            source.segment().fill((byte) 0x77);
            group.transport(0).connection(1).isend(source, 0, 16, 5); // its outcome depends on the provider
            assertThrows(TransportException.class, () -> receiver.await(pending, WAIT));
            for (long i = 0; i < 64; i++) {
                assertEquals((byte) 0x11, reused.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i + " of the reused memory");
            }
        }
    }

    /**
     * The same through a registered view of the buffer (a collective registers the segment of an
     * allocated buffer it is given): closing the buffer fails the view's receive at once, and the
     * message never lands in the memory that a later allocation took.
     */
    @Test
    void aReceiveOnAViewOfAClosedBufferFailsAndNeverWritesTheMemoryThatReusedIt() throws Exception {
        group.connectAll(RUN);
        Transport receiver = group.transport(1);
        RegisteredBuffer old = receiver.allocate(64);
        RegisteredBuffer view = receiver.register(old.segment().asSlice(0, 64));
        long pending = receiver.connection(0).irecv(view, 0, 64, 6);
        old.close();
        assertThrows(TransportException.class, () -> receiver.test(pending), "failed with its buffer, not pending");
        try (RegisteredBuffer reused = receiver.allocate(64);
             RegisteredBuffer source = group.transport(0).allocate(16)) {
            reused.segment().fill((byte) 0x11);
            source.segment().fill((byte) 0x77);
            long sent = group.transport(0).connection(1).isend(source, 0, 16, 6); // its outcome depends on the provider
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            boolean sendOver = false;
            while (System.nanoTime() - deadline < 0) { // both sides make progress for a while
                try {
                    sendOver = sendOver || group.transport(0).test(sent) != Transport.PENDING;
                } catch (TransportException failed) {
                    sendOver = true; // the receiver failed that connection
                }
                try {
                    receiver.connection(0).pollImmediate();
                } catch (TransportException ignored) {
                    // likewise
                }
                Thread.sleep(1);
            }
            for (long i = 0; i < 64; i++) {
                assertEquals((byte) 0x11, reused.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i + " of the reused memory");
            }
        }
    }

    @Test
    void closeIsIdempotentAndFailsLaterUse() throws Exception {
        group.connectAll(Duration.ofSeconds(30L * STARTUP_SCALE));
        Transport t = group.transport(0);
        Connection c = t.connection(1);
        RegisteredBuffer b = t.allocate(8);
        t.close();
        t.close();
        IllegalStateException closed = assertThrows(IllegalStateException.class, c::pollImmediate);
        assertTrue(closed.getMessage().contains("transport of rank 0 is closed"), closed.getMessage());
        assertThrows(RuntimeException.class, () -> c.irecv(b, 0, 8, 1));
        b.close();
        assertThrows(RuntimeException.class, () -> t.allocate(8));
    }

    /** A rank in another JVM is killed while this one waits for it: the wait fails naming it, fast. */
    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void aKilledPeerFailsEveryPendingRequestToIt(TestReporter reporter) throws Exception {
        closeGroup();
        group = null;
        try (RankProcesses ranks = RankProcesses.launchSome(2, List.of(1), PeerRank.class,
                Map.of(TransportConfig.ENV_TRANSPORT, provider().name().toLowerCase()))) {
            var store = ranks.store();
            TransportConfig config = LocalGroup.config(provider()).toBuilder()
                    .timeout(Duration.ofSeconds(20L * STARTUP_SCALE)).build();
            try (Transport t = io.rdma4j.transport.Transports.create(config, store, 0, 2)) {
                Connection c = ranks.withOutputOnFailure(1, () -> t.connection(1));
                RegisteredBuffer b = t.allocate(1 << 20);
                long recv = c.irecv(b, 0, 1 << 20, 1);
                long send = c.isend(b, 0, 1 << 20, 2); // the peer never posts tag 2
                c.flush();
                ranks.withOutputOnFailure(1, () -> store.get("peer-ready", Duration.ofSeconds(20L * STARTUP_SCALE)));
                assertEquals(Transport.PENDING, t.test(recv));
                ranks.kill(1);
                long start = System.nanoTime();
                for (long id : new long[] {recv, send}) {
                    TransportException e = assertThrows(TransportException.class, () -> t.await(id, WAIT));
                    assertEquals(1, e.peer(), e.getMessage());
                    assertTrue(e.getMessage().contains("peer 1"), e.getMessage());
                    assertTrue(!(e instanceof TransportTimeoutException), "failed by detection, not by timeout: " + e);
                }
                long detected = System.nanoTime() - start;
                reporter.publishEntry("peer death detected after ms", Long.toString(detected / 1_000_000));
                // Every provider learns of a dead process from the operating system (pid, socket), not
                // from a transport timeout: well inside this bound even in the emulated guest, where
                // verbs retries alone took 8-15 s.
                assertTrue(detected < TimeUnit.SECONDS.toNanos(DEATH_DETECTION_SECONDS),
                        "peer death detected after " + detected / 1_000_000 + " ms");
            }
        }
    }

    /** Three ranks in three JVMs: a two-sided ring and one-sided writes with immediates. */
    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void ranksInSeparateProcessesExchangeData() throws Exception {
        closeGroup();
        group = null;
        try (RankProcesses ranks = RankProcesses.launch(3, RingRank.class,
                Map.of(TransportConfig.ENV_TRANSPORT, provider().name().toLowerCase(), TransportConfig.ENV_TIMEOUT_MS, Long.toString(20_000L * STARTUP_SCALE)))) {
            ranks.awaitSuccess(Duration.ofSeconds(45L * STARTUP_SCALE));
            for (int r = 0; r < 3; r++) {
                assertTrue(ranks.output(r).contains("rank " + r + " ok"), ranks.output(r));
            }
        }
    }

    /** A rank of {@link #ranksInSeparateProcessesExchangeData}. */
    public static final class RingRank {
        public static void main(String[] args) throws Exception {
            int rank = RankProcesses.childRank();
            int size = RankProcesses.childSize();
            long bytes = (1 << 20) + 3;
            try (var store = RankProcesses.childStore();
                 Transport t = io.rdma4j.transport.Transports.create(RankProcesses.childConfig(), store, rank, size)) {
                int next = (rank + 1) % size;
                int prev = (rank + size - 1) % size;
                Connection toNext = t.connection(next);
                Connection fromPrev = t.connection(prev);
                RegisteredBuffer out = t.allocate(bytes);
                RegisteredBuffer in = t.allocate(bytes);
                RegisteredBuffer window = t.allocate(bytes);
                fill(out.segment(), 0, bytes, rank);
                store.set("window/" + rank, window.remote().toBytes());
                long recv = fromPrev.irecv(in, 0, bytes, 1);
                long send = toNext.isend(out, 0, bytes, 1);
                long write = toNext.write(out, 0, lookup(store, "window/" + next), 0, bytes, 100 + rank);
                assertEquals(bytes, t.await(send, WAIT));
                assertEquals(bytes, t.await(recv, WAIT));
                assertEquals(bytes, t.await(write, WAIT));
                check(in.segment(), 0, bytes, prev);
                assertEquals(100 + prev, awaitImmediate(fromPrev));
                check(window.segment(), 0, bytes, prev);
                // Stay until every rank is done: a departing rank fails its peers' pending requests.
                store.add("ring-done", 1);
                while (Long.parseLong(new String(store.get("ring-done", Duration.ofSeconds(20)))) < size) {
                    try {
                        fromPrev.pollImmediate(); // keeps this side's progress going for the others
                    } catch (TransportException e) {
                        // Only a peer that saw every rank done may have closed already.
                        if (Long.parseLong(new String(store.get("ring-done", Duration.ofSeconds(20)))) < size) {
                            throw e;
                        }
                    }
                    Thread.sleep(1);
                }
                System.out.println("rank " + rank + " ok");
            }
        }
    }

    /** The peer of {@link #aKilledPeerFailsEveryPendingRequestToIt}: connects, signals, waits to be killed. */
    public static final class PeerRank {
        public static void main(String[] args) throws Exception {
            var store = RankProcesses.childStore();
            Transport t = io.rdma4j.transport.Transports.create(RankProcesses.childConfig(), store, RankProcesses.childRank(), 2);
            t.connection(0);
            store.set("peer-ready", new byte[0]);
            Thread.sleep(60_000); // killed long before
            System.exit(3);
        }
    }
}
