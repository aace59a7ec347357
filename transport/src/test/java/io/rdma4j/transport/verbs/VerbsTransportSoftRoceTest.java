package io.rdma4j.transport.verbs;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.transport.Connection;
import io.rdma4j.transport.IdleStrategy;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.testing.LocalGroup;
import io.rdma4j.verbs.testing.SoftRoce;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * What the conformance suite cannot see of the verbs provider, on a real (Soft-RoCE) device:
 * striping over several QPs, credits (with RNR retries off, so one receiver-not-ready would fail
 * the QP), doorbell batching and selective signalling, the progress thread, the pool and the
 * registration cache, and a buffer closed under a transfer.
 */
@Tag(SoftRoce.TAG)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class VerbsTransportSoftRoceTest {
    static final Duration RUN = Duration.ofSeconds(90);
    static final long WAIT = TimeUnit.SECONDS.toNanos(60);

    @BeforeAll
    static void requireDevice() {
        SoftRoce.requireDeviceOrSkip();
    }

    private static LocalGroup group(UnaryOperator<TransportConfig.Builder> settings) {
        return LocalGroup.start(2, settings.apply(LocalGroup.config(TransportConfig.Provider.VERBS).toBuilder()).build());
    }

    private static byte pattern(long i, int seed) {
        return (byte) (i * 31 + seed + (i >>> 9) * 7);
    }

    private static void fill(MemorySegment s, long offset, long length, int seed) {
        for (long i = 0; i < length; i++) {
            s.set(ValueLayout.JAVA_BYTE, offset + i, pattern(i, seed));
        }
    }

    private static void check(MemorySegment s, long offset, long length, int seed) {
        for (long i = 0; i < length; i++) {
            if (s.get(ValueLayout.JAVA_BYTE, offset + i) != pattern(i, seed)) {
                fail("byte " + i + " of " + length + " is wrong");
            }
        }
    }

    private static VerbsConnection connection(Transport t, int peer) {
        t.connection(peer);
        VerbsConnection c = ((VerbsTransport) t).established(peer);
        assertNotNull(c);
        return c;
    }

    /** Writes value i into 8-byte slot i of the peer's "slots" with immediate 7 + i, for i below {@code writes}. */
    private static long[] writeNumberedSlots(Connection c, RegisteredBuffer b, Store store, int writes) {
        RemoteBuffer slots = RemoteBuffer.fromBytes(store.get("slots", Duration.ofSeconds(30)));
        long[] ids = new long[writes];
        for (int i = 0; i < writes; i++) {
            b.segment().set(ValueLayout.JAVA_LONG, 8L * i, i);
            ids[i] = c.write(b, 8L * i, slots, 8L * i, 8, 7 + i);
        }
        return ids;
    }

    private static long awaitImmediate(Connection c) {
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
    void theAutomaticChoiceIsVerbsWhenEveryRankHasADevice() throws Exception {
        try (LocalGroup g = group(b -> b.provider(TransportConfig.Provider.AUTO))) {
            assertEquals("verbs", g.transport(0).provider());
            assertEquals("verbs", g.transport(1).provider());
            g.run(RUN, (rank, t, store) -> {
                try (RegisteredBuffer b = t.allocate(64)) {
                    Connection c = t.connection(1 - rank);
                    long id = rank == 0 ? c.isend(b, 0, 64, 0) : c.irecv(b, 0, 64, 0);
                    assertEquals(64, t.await(id, WAIT));
                }
            });
        }
    }

    @Test
    void largeMessagesAreStripedOverFourQueuePairs() throws Exception {
        long sendBytes = (8L << 20) + 3;
        long writeBytes = (4L << 20) + 5;
        long readBytes = (3L << 20) + 1;
        try (LocalGroup g = group(b -> b.ibQpsPerConnection(4))) {
            g.run(RUN, (rank, t, store) -> {
                Connection c = t.connection(1 - rank);
                VerbsConnection vc = connection(t, 1 - rank);
                assertEquals(4, vc.qps);
                if (rank == 0) {
                    try (RegisteredBuffer src = t.allocate(sendBytes); RegisteredBuffer back = t.allocate(readBytes)) {
                        fill(src.segment(), 0, sendBytes, 1);
                        RemoteBuffer window = RemoteBuffer.fromBytes(store.get("window", Duration.ofSeconds(30)));
                        RemoteBuffer source = RemoteBuffer.fromBytes(store.get("source", Duration.ofSeconds(30)));
                        long[] before = new long[4];
                        for (int q = 0; q < 4; q++) {
                            before[q] = vc.workRequestsPosted(q);
                        }
                        long send = c.isend(src, 0, sendBytes, 1);
                        long write = c.write(src, 0, window, 0, writeBytes, 0xFEEDF00DL);
                        long read = c.read(back, 0, source, 0, readBytes);
                        assertEquals(sendBytes, t.await(send, WAIT));
                        assertEquals(writeBytes, t.await(write, WAIT));
                        assertEquals(readBytes, t.await(read, WAIT));
                        check(back.segment(), 0, readBytes, 3);
                        for (int q = 0; q < 4; q++) {
                            // each QP carried a part of the send (its immediate in its last write, as the send
                            // fills its receive), of the write plus its immediate, and of the read
                            assertTrue(vc.workRequestsPosted(q) - before[q] >= 4,
                                    "QP " + q + " posted only " + (vc.workRequestsPosted(q) - before[q]) + " work requests");
                        }
                    }
                    store.set("done", new byte[0]);
                } else {
                    try (RegisteredBuffer dst = t.allocate(sendBytes); RegisteredBuffer window = t.allocate(writeBytes);
                         RegisteredBuffer source = t.allocate(readBytes)) {
                        fill(source.segment(), 0, readBytes, 3);
                        store.set("window", window.remote().toBytes());
                        store.set("source", source.remote().toBytes());
                        long recv = c.irecv(dst, 0, sendBytes, 1);
                        assertEquals(sendBytes, t.await(recv, WAIT));
                        check(dst.segment(), 0, sendBytes, 1);
                        assertEquals(0xFEEDF00DL, awaitImmediate(c));
                        check(window.segment(), 0, writeBytes, 1);
                        store.get("done", Duration.ofSeconds(60)); // keep the read source alive
                    }
                }
            });
        }
    }

    /**
     * A send that fills its receive ends each QP's part with the write that carries its immediate
     * (one work request per QP, a QP without a part posts an empty write with immediate), and one
     * shorter than its receive posts its parts and then a write with immediate per QP that
     * carries the size; each arrives with its own size. Counted on QPs 1-3, where no credit report
     * can add a work request.
     */
    @Test
    void aSendThatFillsItsReceiveCarriesItsImmediatesInItsLastWrites() throws Exception {
        long[] sizes = {(1L << 20) + 3, 40_000, (1L << 20) + 3, 40_000};
        long[] capacities = {(1L << 20) + 3, 40_000, (1L << 20) + 67, 40_128};
        // work requests on QPs 1-3: part and immediate in one; the 3 parts of 40,000 B leave QP 3 an
        // empty write with immediate; part + immediate; part + immediate, QP 3 the immediate only
        long[][] perQp = {{1, 1, 1}, {1, 1, 1}, {2, 2, 2}, {2, 2, 1}};
        try (LocalGroup g = group(b -> b.ibQpsPerConnection(4))) {
            g.run(RUN, (rank, t, store) -> {
                Connection c = t.connection(1 - rank);
                VerbsConnection vc = connection(t, 1 - rank);
                try (RegisteredBuffer b = t.allocate(capacities[2])) {
                    for (int i = 0; i < sizes.length; i++) {
                        if (rank == 0) {
                            fill(b.segment(), 0, sizes[i], 20 + i);
                            store.get("posted-" + i, Duration.ofSeconds(30));
                            long[] before = new long[4];
                            for (int q = 0; q < 4; q++) {
                                before[q] = vc.workRequestsPosted(q);
                            }
                            assertEquals(sizes[i], t.await(c.isend(b, 0, sizes[i], 7), WAIT));
                            for (int q = 1; q < 4; q++) {
                                assertEquals(perQp[i][q - 1], vc.workRequestsPosted(q) - before[q],
                                        "work requests on QP " + q + " for " + sizes[i] + " bytes into " + capacities[i]);
                            }
                        } else {
                            b.segment().fill((byte) 0x5A);
                            long id = c.irecv(b, 0, capacities[i], 7);
                            c.flush();
                            store.set("posted-" + i, new byte[0]);
                            assertEquals(sizes[i], t.await(id, WAIT), "receive " + i);
                            check(b.segment(), 0, sizes[i], 20 + i);
                            MemorySegment beyond = b.segment().asSlice(sizes[i]);
                            MemorySegment untouched = Arena.ofAuto().allocate(beyond.byteSize()).fill((byte) 0x5A);
                            assertEquals(-1, beyond.mismatch(untouched), "receive " + i + ": a byte beyond the message changed");
                        }
                    }
                }
            });
        }
    }

    /**
     * Four times more writes-with-immediate and sends than the receiver has receives posted, all
     * at once, with RNR retries off: any write that found no receive would fail the QP
     * (RNR_RETRY_EXC_ERR). Credits hold the sender back instead, and every message and immediate
     * arrives, in order.
     */
    @Test
    void creditsKeepEveryImmediateWithinThePostedReceives() throws Exception {
        int writes = 4 * VerbsConnection.RECV_DEPTH;
        int sends = 2 * VerbsConnection.RECV_DEPTH;
        try (LocalGroup g = group(b -> b.ibQpsPerConnection(2).ibRnrRetry(0))) {
            g.run(RUN, (rank, t, store) -> {
                Connection c = t.connection(1 - rank);
                try (RegisteredBuffer b = t.allocate(8L * writes); RegisteredBuffer m = t.allocate(64L * sends)) {
                    if (rank == 0) {
                        RemoteBuffer slots = RemoteBuffer.fromBytes(store.get("slots", Duration.ofSeconds(30)));
                        long[] ids = new long[writes + sends];
                        for (int i = 0; i < writes; i++) {
                            b.segment().set(ValueLayout.JAVA_LONG, 8L * i, 5000 + i);
                            ids[i] = c.write(b, 8L * i, slots, 8L * i, 8, i);
                        }
                        for (int i = 0; i < sends; i++) {
                            fill(m.segment(), 64L * i, 64, i);
                            ids[writes + i] = c.isend(m, 64L * i, 64, 2);
                        }
                        c.flush();
                        VerbsConnection vc = connection(t, 1);
                        for (int q = 0; q < 2; q++) {
                            assertTrue(vc.credits.immediatesInFlight(q) <= VerbsConnection.RECV_DEPTH);
                        }
                        for (int i = 0; i < ids.length; i++) {
                            assertEquals(i < writes ? 8 : 64, t.await(ids[i], WAIT), "request " + i);
                        }
                    } else {
                        store.set("slots", b.remote().toBytes());
                        long[] recvs = new long[sends];
                        for (int i = 0; i < sends; i++) {
                            recvs[i] = c.irecv(m, 64L * i, 64, 2);
                        }
                        for (int i = 0; i < writes; i++) {
                            assertEquals(i, awaitImmediate(c), "immediates out of order");
                            assertEquals(5000 + i, b.segment().get(ValueLayout.JAVA_LONG, 8L * i), "slot " + i);
                        }
                        for (int i = 0; i < sends; i++) {
                            assertEquals(64, t.await(recvs[i], WAIT));
                            check(m.segment(), 64L * i, 64, i);
                        }
                    }
                }
            });
        }
    }

    /** Work requests wait in the batch until flush, go out with one doorbell, and only a few ask for a completion. */
    @Test
    void writesWaitForFlushAndShareOneDoorbell() throws Exception {
        int n = 20;
        writeIntoPeerWindow(b -> b.batchSize(32).signalInterval(16), 8L * n, (t, c, vc, peerWindow) -> {
            try (RegisteredBuffer src = t.allocate(8L * n)) {
                long doorbells = vc.doorbells(0);
                long posted = vc.workRequestsPosted(0);
                long signalled = vc.signalled(0);
                long[] ids = new long[n];
                for (int i = 0; i < n; i++) {
                    src.segment().set(ValueLayout.JAVA_LONG, 8L * i, 100 + i);
                    ids[i] = c.write(src, 8L * i, peerWindow.remote(), 8L * i, 8, Connection.NO_IMMEDIATE);
                }
                Thread.sleep(200);
                assertEquals(doorbells, vc.doorbells(0), "nothing is posted before flush");
                assertEquals(posted, vc.workRequestsPosted(0));
                for (int i = 0; i < n; i++) {
                    assertEquals(0, peerWindow.segment().get(ValueLayout.JAVA_LONG, 8L * i), "write " + i + " arrived unflushed");
                }
                c.flush();
                assertEquals(doorbells + 1, vc.doorbells(0), "one doorbell for the batch");
                assertEquals(posted + n, vc.workRequestsPosted(0));
                // the 16th request (interval) and the batch's last (requests wait for it) are signalled
                assertEquals(signalled + 2, vc.signalled(0));
                for (long id : ids) {
                    assertEquals(8, t.await(id, WAIT));
                }
                for (int i = 0; i < n; i++) {
                    assertEquals(100 + i, peerWindow.segment().get(ValueLayout.JAVA_LONG, 8L * i));
                }
            }
        });
    }

    /** Rank 0's part of {@link #writeIntoPeerWindow}. */
    private interface WindowWriter {
        void write(Transport t, Connection c, VerbsConnection vc, RegisteredBuffer peerWindow) throws Exception;
    }

    /**
     * Two ranks: rank 1 allocates a zeroed window of {@code bytes} and keeps it until rank 0's
     * {@code writer}, which reads that window's memory directly, is done.
     */
    private static void writeIntoPeerWindow(UnaryOperator<TransportConfig.Builder> settings, long bytes,
                                            WindowWriter writer) throws Exception {
        CompletableFuture<RegisteredBuffer> window = new CompletableFuture<>();
        CountDownLatch done = new CountDownLatch(1);
        try (LocalGroup g = group(settings)) {
            g.run(RUN, (rank, t, store) -> {
                Connection c = t.connection(1 - rank);
                if (rank == 1) {
                    RegisteredBuffer w = t.allocate(bytes);
                    w.segment().fill((byte) 0);
                    window.complete(w);
                    assertTrue(done.await(60, TimeUnit.SECONDS));
                    w.close();
                    return;
                }
                RegisteredBuffer peerWindow = window.get(30, TimeUnit.SECONDS);
                try {
                    writer.write(t, c, connection(t, 1), peerWindow);
                } finally {
                    done.countDown();
                }
            });
        }
    }

    /**
     * More writes than the send queue holds go out on flushes alone: a flush polls the completions
     * that free queue room, as a wait does, so an application that flushes and then waits for the
     * data by other means (the peer reads its memory) does not hang on writes that never left.
     */
    @Test
    void writesBeyondTheSendQueueGoOutOnFlushesAlone() throws Exception {
        int n = 1200;
        writeIntoPeerWindow(b -> b.progressThread(false), 8L * n, (t, c, vc, peerWindow) -> {
            try (RegisteredBuffer src = t.allocate(8L * n)) {
                long[] ids = new long[n];
                for (int i = 0; i < n; i++) {
                    src.segment().set(ValueLayout.JAVA_LONG, 8L * i, 1000 + i);
                    ids[i] = c.write(src, 8L * i, peerWindow.remote(), 8L * i, 8, Connection.NO_IMMEDIATE);
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (peerWindow.segment().get(ValueLayout.JAVA_LONG, 8L * (n - 1)) != 1000 + n - 1) {
                    assertTrue(System.nanoTime() < deadline, "write " + (n - 1) + " never arrived; posted "
                            + vc.workRequestsPosted(0) + " work requests on flushes alone");
                    c.flush();
                }
                for (long id : ids) {
                    assertEquals(8, t.await(id, WAIT));
                }
            }
        });
    }

    /**
     * An irecv and an eager isend to the same peer, flushed together, post one work request: the
     * receive's CTS rides in the eager message's header, in either order of the two calls. Rank
     * 0 sends first, rank 1 receives first; every message arrives whole and every send completes
     * (which needs the carried CTS). Without the carrying each exchange would post two work
     * requests per side; credit reports add one per 8 messages or so.
     */
    /**
     * A verbs object keeps its parents alive, so a close that forgot one (a QP, a CQ, an MR)
     * would leave the device open for good: every object must be freed once the transports close.
     */
    @Test
    void closingTheTransportsFreesEveryVerbsObjectTheyMade() throws Exception {
        int before = NativeResource.unreleasedCount();
        try (Arena arena = Arena.ofShared(); LocalGroup g = group(b -> b.ibQpsPerConnection(2))) { // g closes first
            MemorySegment own = arena.allocate(1 << 16, 4096);
            g.run(RUN, (rank, t, store) -> {
                RegisteredBuffer registered = t.register(own.asSlice(rank * (1L << 15), 1L << 15));
                try (RegisteredBuffer b = t.allocate(1 << 20)) {
                    Connection c = t.connection(1 - rank);
                    long id = rank == 0 ? c.isend(b, 0, 1 << 20, 0) : c.irecv(b, 0, 1 << 20, 0);
                    assertEquals(1 << 20, t.await(id, WAIT));
                    long small = rank == 0 ? c.isend(registered, 0, 64, 1) : c.irecv(registered, 0, 64, 1);
                    assertEquals(64, t.await(small, WAIT));
                }
            });
            assertTrue(NativeResource.unreleasedCount() > before, "the transports hold verbs objects while open");
        }
        assertEquals(before, NativeResource.unreleasedCount(), "verbs objects left unreleased by the closed transports");
    }

    /**
     * Caller memory registered, sent or received into, and freed 1,000 times, at places and sizes
     * that change: each registration is released once its memory is freed, so the bytes this
     * transport pins and the kernel's VmPin stay bounded and return to where they were when the
     * transports close; a closed registration is released at once and refused afterwards; and
     * memory at a reused address travels under its own key (the data would be the old pages'
     * otherwise); and a job that only reuses its registrations still has those of freed memory
     * released, by the periodic sweep.
     */
    @Test
    void registrationsOfFreedMemoryAreReleased() throws Exception {
        long pinBefore = SoftRoce.vmPinKiB();
        int rounds = 1000;
        long[] pinAfterWarmUp = new long[1];
        java.util.Set<Long> seen = java.util.concurrent.ConcurrentHashMap.newKeySet();
        int[] reused = new int[1];
        try (LocalGroup g = group(b -> b)) {
            g.run(RUN, (rank, t, store) -> {
                VerbsTransport vt = (VerbsTransport) t;
                Connection c = t.connection(1 - rank);
                for (int i = 0; i < rounds; i++) {
                    int bytes = 4096 * (1 + i % 7);
                    long shift = 64L * (i % 5);
                    try (Arena arena = Arena.ofShared()) {
                        MemorySegment mem = arena.allocate(bytes + shift, 64).asSlice(shift, bytes);
                        if (!seen.add(mem.address())) {
                            reused[0]++;
                        }
                        RegisteredBuffer r = t.register(mem);
                        assertTrue(vt.pinnedBytes() <= 2L * 7 * 4096, "rank " + rank + " round " + i + ": "
                                + vt.pinnedBytes() + " bytes pinned");
                        if (rank == 0) {
                            fill(mem, 0, bytes, i);
                            assertEquals(bytes, t.await(c.isend(r, 0, bytes, 5), WAIT));
                        } else {
                            assertEquals(bytes, t.await(c.irecv(r, 0, bytes, 5), WAIT));
                            check(mem, 0, bytes, i);
                        }
                    }
                    if (i == 10 && rank == 0) {
                        pinAfterWarmUp[0] = SoftRoce.vmPinKiB();
                    }
                }
                // explicit release: pinned bytes drop at once, the closed registration is refused
                try (Arena arena = Arena.ofShared()) {
                    MemorySegment mem = arena.allocate(1 << 16, 4096);
                    assertTrue(vt.pinnedBytes() > 0, "the last round's registration is cached until the next one");
                    RegisteredBuffer r = t.register(mem);
                    assertEquals(1 << 16, vt.pinnedBytes(), "this registration only: the last round's, whose memory "
                            + "was freed, was released by it");
                    r.close();
                    assertEquals(0, vt.pinnedBytes());
                    assertThrows(IllegalStateException.class, () -> c.isend(r, 0, 8, 6));
                    assertTrue(t.register(mem) != r, "registering again makes a new registration");
                }
                // a job that only reuses its registrations still releases the ones of memory it
                // freed: every SWEEP_INTERVAL register calls sweep the cache
                try (Arena keep = Arena.ofShared()) {
                    MemorySegment kept = keep.allocate(4096, 4096);
                    t.register(kept);
                    try (Arena gone = Arena.ofShared()) {
                        t.register(gone.allocate(8192, 4096));
                    }
                    assertTrue(vt.pinnedBytes() > kept.byteSize(), "freed memory stays registered until a sweep");
                    for (long i = 0; i < VerbsTransport.SWEEP_INTERVAL; i++) {
                        t.register(kept);
                    }
                    assertEquals(kept.byteSize(), vt.pinnedBytes(), "the sweep released the freed memory's registrations");
                }
            });
            long pinAtEnd = SoftRoce.vmPinKiB();
            System.out.printf("VmPin after %d rounds: %d kB%n", rounds, pinAtEnd);
            assertTrue(pinAtEnd <= pinAfterWarmUp[0] + 256, "VmPin grew from " + pinAfterWarmUp[0] + " kB after 10 "
                    + "rounds to " + pinAtEnd + " kB after " + rounds);
        }
        assertTrue(reused[0] > 0, "no address was reused, so stale keys were not put to the test");
        long pinAfter = SoftRoce.vmPinKiB();
        System.out.printf("VmPin: %d kB before, %d kB after 10 rounds, %d kB after the transports closed; "
                + "%d registrations at a reused address%n", pinBefore, pinAfterWarmUp[0], pinAfter, reused[0]);
        assertEquals(pinBefore, pinAfter, "VmPin after the transports closed");
    }

    /**
     * With a registration cap, live memory beyond it is registered by releasing the least
     * recently used registrations that no pending request uses: the pinned bytes never exceed the
     * cap, a receive posted before all that keeps its registration and gets its data, memory
     * whose registration went travels correctly once registered again, one whose remote
     * descriptor was handed out stays, and memory larger than the cap is refused naming the
     * variable.
     */
    @Test
    void registrationsStayWithinTheCapByReleasingTheLeastRecentlyUsed() throws Exception {
        long cap = 64 << 10;
        try (LocalGroup g = group(b -> b.registrationCapBytes(cap))) {
            g.run(RUN, (rank, t, store) -> {
                VerbsTransport vt = (VerbsTransport) t;
                Connection c = t.connection(1 - rank);
                try (Arena arena = Arena.ofShared()) {
                    MemorySegment held = arena.allocate(16 << 10, 4096);
                    RegisteredBuffer heldReg = t.register(held);
                    long pending = rank == 1 ? c.irecv(heldReg, 0, held.byteSize(), 7) : -1;
                    RegisteredBuffer exposed = t.register(arena.allocate(4096, 4096));
                    exposed.remote(); // a peer could write or read it from now on
                    MemorySegment[] live = new MemorySegment[40]; // 160 KiB in all, 2.5 times the cap
                    for (int k = 0; k < live.length; k++) {
                        live[k] = arena.allocate(4096L * (1 + k % 2), 64);
                    }
                    for (int round = 0; round < 3; round++) {
                        for (int k = 0; k < live.length; k++) {
                            RegisteredBuffer r = t.register(live[k]);
                            assertTrue(vt.pinnedBytes() <= cap, "rank " + rank + ": " + vt.pinnedBytes() + " bytes pinned");
                            long n = live[k].byteSize();
                            int seed = 100 * round + k;
                            if (rank == 0) {
                                fill(live[k], 0, n, seed);
                                assertEquals(n, t.await(c.isend(r, 0, n, 5), WAIT));
                            } else {
                                assertEquals(n, t.await(c.irecv(r, 0, n, 5), WAIT));
                                check(live[k], 0, n, seed);
                            }
                        }
                    }
                    assertTrue(vt.registrationEvictions() >= 2 * live.length, "rank " + rank + ": only "
                            + vt.registrationEvictions() + " registrations released for " + 3 * live.length + " uses");
                    assertFalse(((VerbsBuffer) exposed).closed, "a registration whose remote descriptor was handed out was released");
                    if (rank == 1) {
                        assertFalse(((VerbsBuffer) heldReg).closed, "the pending receive's registration was released");
                        store.set("cap/sent-after", new byte[] {1});
                        assertEquals(held.byteSize(), t.await(pending, WAIT));
                        check(held, 0, held.byteSize(), 77);
                    } else {
                        store.get("cap/sent-after", RUN);
                        fill(held, 0, held.byteSize(), 77);
                        assertEquals(held.byteSize(), t.await(c.isend(t.register(held), 0, held.byteSize(), 7), WAIT));
                    }
                    MemorySegment tooLarge = arena.allocate(cap + 4096, 4096);
                    TransportException e = assertThrows(TransportException.class, () -> t.register(tooLarge));
                    assertTrue(e.getMessage().contains("RDMA4J_REGISTRATION_CAP_BYTES"), e.getMessage());
                }
            });
        }
    }

    /**
     * Rank 1 posts its irecv first (its eager message carries the CTS and, at 8 bytes, goes
     * inline), rank 0 its isend first (the message stays open until the doorbell and takes the
     * CTS then): either way one work request per exchange, plus a credit report now and then.
     */
    @Test
    void aClearToSendRidesInTheEagerMessageFlushedWithIt() throws Exception {
        int rounds = 32;
        try (LocalGroup g = group(b -> b)) {
            g.run(RUN, (rank, t, store) -> {
                Connection c = t.connection(1 - rank);
                VerbsConnection vc = connection(t, 1 - rank);
                assertTrue(vc.sends[0].inlines(EagerHeader.BYTES + 8), "an 8-byte eager message with its CTS fits inline");
                for (int bytes : new int[] {8, 200}) {
                    try (RegisteredBuffer out = t.allocate(bytes); RegisteredBuffer in = t.allocate(bytes)) {
                        exchange(t, c, out, in, rank, -1, bytes); // connection set up, first credits seen
                        long posted = vc.workRequestsPosted(0);
                        long inlined = vc.sends[0].inlined();
                        for (int i = 0; i < rounds; i++) {
                            exchange(t, c, out, in, rank, i, bytes);
                        }
                        long postedInRounds = vc.workRequestsPosted(0) - posted;
                        assertTrue(postedInRounds <= rounds + rounds / 4, "rank " + rank + " posted " + postedInRounds
                                + " work requests for " + rounds + " exchanges of an irecv and an eager isend of " + bytes + " B");
                        if (rank == 1 && bytes == 8) {
                            assertTrue(vc.sends[0].inlined() - inlined >= rounds, "rank 1 sent " + (vc.sends[0].inlined() - inlined)
                                    + " of its " + rounds + " 8-byte messages (each carrying a CTS) inline");
                        }
                    }
                }
            });
        }
    }

    private static void exchange(Transport t, Connection c, RegisteredBuffer out, RegisteredBuffer in, int rank, int round,
                                 int bytes) {
        fill(out.segment(), 0, bytes, 2 * round + rank);
        long send;
        long recv;
        if (rank == 0) {
            send = c.isend(out, 0, bytes, 3);
            recv = c.irecv(in, 0, bytes, 3);
        } else {
            recv = c.irecv(in, 0, bytes, 3);
            send = c.isend(out, 0, bytes, 3);
        }
        c.flush();
        assertEquals(bytes, t.await(send, WAIT), "round " + round);
        assertEquals(bytes, t.await(recv, WAIT), "round " + round);
        check(in.segment(), 0, bytes, 2 * round + 1 - rank);
    }

    /**
     * The receiver's application never calls its transport; only its progress thread re-posts
     * receives and returns credits. More writes-with-immediate than one round of credits complete.
     */
    @Test
    void theProgressThreadReturnsCreditsWhileTheApplicationComputes() throws Exception {
        int writes = 3 * VerbsConnection.RECV_DEPTH;
        CountDownLatch written = new CountDownLatch(1);
        try (LocalGroup g = group(b -> b.progressThread(true).progressCpu(0).idleStrategy(IdleStrategy.Kind.BACKOFF))) {
            g.run(RUN, (rank, t, store) -> {
                Connection c = t.connection(1 - rank);
                assertTrue(((VerbsTransport) t).progressThreadRunning());
                try (RegisteredBuffer b = t.allocate(8L * writes)) {
                    if (rank == 0) {
                        long[] ids = writeNumberedSlots(c, b, store, writes);
                        for (long id : ids) {
                            assertEquals(8, t.await(id, WAIT));
                        }
                        assertEquals(null, ((VerbsTransport) t).progressThreadPinFailure(), "sched_setaffinity to CPU 0");
                        written.countDown();
                    } else {
                        store.set("slots", b.remote().toBytes());
                        assertTrue(written.await(60, TimeUnit.SECONDS), "the writes never completed");
                        for (int i = 0; i < writes; i++) {
                            assertEquals(7 + i, awaitImmediate(c));
                        }
                        assertEquals(Connection.NO_IMMEDIATE, c.pollImmediate());
                    }
                }
            });
        }
    }

    /**
     * The receiver holds at most USER_RING values its application has not polled: the writer's
     * next write with an immediate waits (its progress thread running meanwhile) until the
     * receiver polls, and then every value comes, in order.
     */
    @Test
    void writesWithImmediatesBeyondWhatThePeerHoldsWaitForItsPolls() throws Exception {
        int held = VerbsConnection.USER_RING;
        int writes = held + 64;
        CountDownLatch checked = new CountDownLatch(1);
        try (LocalGroup g = group(b -> b.progressThread(true).idleStrategy(IdleStrategy.Kind.BACKOFF))) {
            g.run(RUN, (rank, t, store) -> {
                Connection c = t.connection(1 - rank);
                try (RegisteredBuffer b = t.allocate(8L * writes)) {
                    if (rank == 0) {
                        long[] ids = writeNumberedSlots(c, b, store, writes);
                        c.flush();
                        for (int i = 0; i < held; i++) {
                            assertEquals(8, t.await(ids[i], WAIT), "write " + i);
                        }
                        Thread.sleep(500); // both progress threads run: nothing frees a slot of the peer's ring
                        assertEquals(Transport.PENDING, t.test(ids[held]), "the write beyond the peer's ring waits");
                        checked.countDown();
                        for (int i = held; i < writes; i++) {
                            assertEquals(8, t.await(ids[i], WAIT), "write " + i + " once the peer polled");
                        }
                    } else {
                        store.set("slots", b.remote().toBytes());
                        assertTrue(checked.await(120, TimeUnit.SECONDS), "the writer never checked");
                        for (int i = 0; i < writes; i++) {
                            assertEquals(7 + i, awaitImmediate(c), "value " + i);
                            assertEquals(i, b.segment().get(ValueLayout.JAVA_LONG, 8L * i), "slot " + i);
                        }
                        assertEquals(Connection.NO_IMMEDIATE, c.pollImmediate());
                    }
                }
            });
        }
    }

    /**
     * With the progress thread taking completions, an eager message lands in memory of the
     * receiver's confined arena (the usual FFM idiom), which the progress thread itself may not
     * access: the provider copies through the same memory without the arena's scope.
     */
    @Test
    void theProgressThreadDeliversIntoMemoryOfAConfinedArena() throws Exception {
        try (LocalGroup g = group(b -> b.progressThread(true))) {
            g.run(RUN, (rank, t, store) -> {
                Connection c = t.connection(1 - rank);
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment memory = arena.allocate(64);
                    RegisteredBuffer b = t.register(memory);
                    if (rank == 0) {
                        memory.set(ValueLayout.JAVA_LONG, 0, 0x1122334455667788L);
                        assertEquals(8, t.await(c.isend(b, 0, 8, 3), WAIT));
                    } else {
                        long r = c.irecv(b, 0, 64, 3);
                        Thread.sleep(500); // the progress thread takes the completion meanwhile
                        assertEquals(8, t.await(r, WAIT));
                        assertEquals(0x1122334455667788L, memory.get(ValueLayout.JAVA_LONG, 0));
                    }
                }
            });
        }
    }

    /**
     * Memory registered again under another scope (e.g. a new MemorySegment.ofBuffer view) while a
     * send from the first registration waits for its CTS: the first stays registered until the
     * send is over, and the send delivers its bytes.
     */
    @Test
    void aRegistrationReplacedWhileASendUsesItStaysUntilTheSendIsOver() throws Exception {
        int bytes = 1 << 20;
        try (LocalGroup g = group(b -> b)) {
            g.run(RUN, (rank, t, store) -> {
                Connection c = t.connection(1 - rank);
                if (rank == 0) {
                    try (Arena first = Arena.ofShared(); Arena second = Arena.ofShared()) {
                        MemorySegment memory = first.allocate(bytes, 64);
                        fill(memory, 0, bytes, 5);
                        RegisteredBuffer old = t.register(memory);
                        long send = c.isend(old, 0, bytes, 9); // a rendezvous: it waits for rank 1's receive
                        RegisteredBuffer replacement = t.register(memory.reinterpret(second, null));
                        assertNotSame(old, replacement);
                        store.set("registered again", new byte[] {1});
                        assertEquals(bytes, t.await(send, WAIT));
                    }
                } else {
                    store.get("registered again", Duration.ofSeconds(60));
                    try (RegisteredBuffer b = t.allocate(bytes)) {
                        assertEquals(bytes, t.await(c.irecv(b, 0, bytes, 9), WAIT));
                        check(b.segment(), 0, bytes, 5);
                    }
                }
            });
        }
    }

    /** Every connection's send queues and receives fit its completion queue, whatever the device granted. */
    @Test
    void sendsAndReceivesFitTheCompletionQueue() throws Exception {
        try (LocalGroup g = group(b -> b.ibQpsPerConnection(4))) {
            g.run(RUN, (rank, t, store) -> {
                VerbsConnection c = connection(t, 1 - rank);
                int room = 0;
                for (SendQueue q : c.sends) {
                    room += q.depth() + 1 + VerbsConnection.RECV_DEPTH + 1;
                }
                assertTrue(room <= c.completionQueueCapacity(), room + " completions could be due, CQ of "
                        + c.completionQueueCapacity());
            });
        }
    }

    @Test
    void poolBlocksAreReusedAndRegistrationsCached() throws Exception {
        try (LocalGroup g = group(b -> b.hugePages(true))) {
            VerbsTransport t = (VerbsTransport) g.transport(0);
            RegisteredBuffer a = t.allocate(1 << 20);
            long address = a.segment().address();
            int regions = t.pool().regionCount();
            BufferPool.Region region = t.pool().regionContaining(address, 1 << 20);
            assertTrue(region.hugePages || t.pool().hugePageFailure().contains("MAP_HUGETLB"),
                    "huge pages either used or the reason logged: " + t.pool().hugePageFailure());
            // a slice of an allocated buffer is registered already: same key, no new region
            RegisteredBuffer slice = t.register(a.segment().asSlice(4096, 8192));
            assertEquals(a.remote().key(), slice.remote().key());
            assertEquals(address + 4096, slice.remote().address());
            a.close();
            RegisteredBuffer again = t.allocate((1 << 20) - 100);
            assertEquals(address, again.segment().address(), "the freed block is handed out again");
            assertEquals(regions, t.pool().regionCount(), "and nothing new was registered");
            try (Arena arena = Arena.ofShared()) {
                MemorySegment mine = arena.allocate(3 * 4096);
                RegisteredBuffer r = t.register(mine);
                assertSame(r, t.register(mine));
                assertTrue(r.remote().key() != a.remote().key(), "caller memory gets a region of its own");
            }
            assertThrows(IllegalArgumentException.class, () -> t.register(MemorySegment.ofArray(new long[4])));
        }
    }

    /**
     * With huge pages requested the pool maps its regions from the reserved 2 MiB pages (the
     * kernel says so in /proc/self/smaps, not our own flag) while enough are free, and when a
     * region needs more than are left it uses 4 KiB pages and keeps the reason (ENOMEM).
     * scripts/softroce-test reserves 24 pages in the guest, room for one 32 MiB chunk; with none
     * reserved only the fallback is checked.
     */
    @Test
    void hugePagesAreUsedWhileReservedAndTheFallbackSaysWhy() throws Exception {
        assertEquals(HugePages.PAGE >> 10, meminfo("Hugepagesize:"), "this test assumes 2 MiB huge pages");
        try (LocalGroup g = group(b -> b.hugePages(true))) {
            VerbsTransport t = (VerbsTransport) g.transport(0);
            long chunkPages = BufferPool.CHUNK / HugePages.PAGE;
            if (meminfo("HugePages_Total:") >= chunkPages) {
                assertTrue(meminfo("HugePages_Free:") >= chunkPages, "the reserved huge pages are taken by something else");
                RegisteredBuffer small = t.allocate(1 << 20);
                long address = small.segment().address();
                assertTrue(t.pool().regionContaining(address, 1 << 20).hugePages, "reserved pages were free: "
                        + t.pool().hugePageFailure());
                assertEquals(2048, kernelPageSizeKb(address), "the kernel backs the block with 2 MiB pages");
                assertNull(t.pool().hugePageFailure());
                small.segment().fill((byte) 1);
                small.close();
            }
            long beyond = (meminfo("HugePages_Free:") + 1) * HugePages.PAGE;
            try (RegisteredBuffer big = t.allocate(beyond)) {
                long address = big.segment().address();
                assertFalse(t.pool().regionContaining(address, beyond).hugePages);
                assertEquals(4, kernelPageSizeKb(address), "a region beyond the reserved pages has 4 KiB pages");
                String why = t.pool().hugePageFailure();
                assertNotNull(why);
                assertTrue(why.contains("ENOMEM") && why.contains("vm.nr_hugepages"), why);
            }
        }
    }

    /** A field of /proc/meminfo (huge page counts, or the page size in kB). */
    private static long meminfo(String field) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
            if (line.startsWith(field)) {
                return Long.parseLong(line.substring(field.length()).trim().split("\\s+")[0]);
            }
        }
        throw new AssertionError("no " + field + " in /proc/meminfo");
    }

    /** The KernelPageSize (kB) of the mapping that holds {@code address}, from /proc/self/smaps. */
    private static long kernelPageSizeKb(long address) throws IOException {
        boolean inside = false;
        for (String line : Files.readAllLines(Path.of("/proc/self/smaps"))) {
            int dash = line.indexOf('-');
            int space = line.indexOf(' ');
            if (dash > 0 && space > dash && line.substring(0, dash).matches("[0-9a-f]+")) {
                long start = Long.parseUnsignedLong(line.substring(0, dash), 16);
                long end = Long.parseUnsignedLong(line.substring(dash + 1, space), 16);
                inside = Long.compareUnsigned(address, start) >= 0 && Long.compareUnsigned(address, end) < 0;
            } else if (inside && line.startsWith("KernelPageSize:")) {
                return Long.parseLong(line.substring("KernelPageSize:".length()).trim().split("\\s+")[0]);
            }
        }
        throw new AssertionError("no mapping holds 0x" + Long.toHexString(address) + " in /proc/self/smaps");
    }

    /**
     * A receive buffer is closed after its CTS (address and rkey) went to the peer: the connection
     * is failed and its QPs drained and destroyed before the block goes back to the pool, so when
     * the peer then sends against that CTS, nothing lands in the block's next user; the send fails
     * naming this rank instead.
     */
    @Test
    void aBufferClosedAfterItsClearToSendIsNeverWrittenOnceReused() throws Exception {
        long bytes = 4L << 20;
        CountDownLatch reused = new CountDownLatch(1);
        CountDownLatch sent = new CountDownLatch(1);
        try (LocalGroup g = group(b -> b)) {
            g.run(RUN, (rank, t, store) -> {
                Connection c = t.connection(1 - rank);
                if (rank == 1) {
                    RegisteredBuffer src = t.allocate(bytes);
                    src.segment().fill((byte) 0x77);
                    assertTrue(reused.await(60, TimeUnit.SECONDS));
                    long send = c.isend(src, 0, bytes, 9); // matches the CTS of the closed buffer
                    TransportException e = assertThrows(TransportException.class, () -> t.await(send, WAIT),
                            "a send into a receiver whose QPs are gone must fail");
                    assertEquals(0, e.peer(), e.getMessage());
                    sent.countDown();
                    return;
                }
                RegisteredBuffer dst = t.allocate(bytes);
                long address = dst.segment().address();
                long recv = c.irecv(dst, 0, bytes, 9);
                c.flush();
                long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
                while (System.nanoTime() - until < 0) {
                    assertEquals(Transport.PENDING, t.test(recv)); // the CTS write completes meanwhile
                }
                dst.close();
                TransportException e = assertThrows(TransportException.class, () -> t.await(recv, WAIT));
                assertEquals(1, e.peer());
                RegisteredBuffer next = t.allocate(bytes);
                assertEquals(address, next.segment().address(), "the same block came back");
                next.segment().fill((byte) 0x11);
                reused.countDown();
                assertTrue(sent.await(60, TimeUnit.SECONDS), "the peer's send did not end");
                for (long i = 0; i < bytes; i += 512) {
                    assertEquals(0x11, next.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i + " was written after the close");
                }
                assertThrows(TransportException.class, () -> c.isend(next, 0, 8, 1), "the connection stays failed");
            });
        }
    }
}
