package io.rdma4j.transport.verbs;

import io.rdma4j.transport.TransportException;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The verbs provider's protocol arithmetic, checked without a device: striping, immediate and
 * CTS encodings, the control region layout, credit accounting (against a simulated peer),
 * endpoint descriptors and the pool's size classes. Soft-RoCE tests cover the same paths on a
 * real device.
 */
class VerbsProtocolTest {

    // ---- Striping.

    @Test
    void partsCoverTheMessageExactlyOn128ByteBoundaries() {
        long[] sizes = {1, 2, 127, 128, 129, 255, 4095, 16383, 16384, 16385, 40_000, 65_536, (1 << 20) + 3,
                64L << 20, (3L << 30) + 17};
        for (int qps = 1; qps <= 8; qps++) {
            for (long size : sizes) {
                checkParts(size, qps);
            }
        }
        Random random = new Random(42);
        for (int i = 0; i < 2000; i++) {
            checkParts(1 + (random.nextLong() & ((1L << 28) - 1)), 1 + random.nextInt(16));
        }
    }

    private static void checkParts(long size, int qps) {
        int parts = Striping.parts(size, qps);
        String what = size + " bytes over " + qps + " QPs";
        assertTrue(parts >= 1 && parts <= qps, what + ": " + parts + " parts");
        long next = 0;
        for (int j = 0; j < parts; j++) {
            long offset = Striping.partOffset(size, parts, j);
            long length = Striping.partSize(size, parts, j);
            assertEquals(next, offset, what + ": part " + j + " does not follow the previous one");
            assertEquals(0, offset % Striping.ALIGNMENT, what + ": part " + j + " starts at " + offset);
            assertTrue(length > 0, what + ": part " + j + " is empty");
            if (parts > 1) {
                assertTrue(length >= Striping.MIN_PART / 2 || j == parts - 1, what + ": part " + j + " has only " + length + " bytes");
            }
            next = offset + length;
        }
        assertEquals(size, next, what + ": parts end at " + next);
    }

    @Test
    void largeMessagesUseEveryQpAndSmallOnesOne() {
        assertEquals(4, Striping.parts((1 << 20) + 3, 4));
        assertEquals(4, Striping.parts(64L << 20, 4));
        assertEquals(1, Striping.parts(4095, 4));
        assertEquals(1, Striping.parts(Striping.MIN_PART, 4));
        assertEquals(2, Striping.parts(Striping.MIN_PART + 1, 4));
        assertEquals(0, Striping.parts(0, 4));
        // 1 MiB + 3 over 4 QPs: three parts of 262272 bytes (2049 x 128) and the rest
        assertEquals(262_272, Striping.partSize((1 << 20) + 3, 4, 0));
        assertEquals((1 << 20) + 3 - 3 * 262_272, Striping.partSize((1 << 20) + 3, 4, 3));
    }

    @Test
    void partsBeyondOneGibibyteTakeSeveralWorkRequests() {
        assertEquals(1, Striping.workRequests(0));
        assertEquals(1, Striping.workRequests(Striping.MAX_WORK_REQUEST));
        assertEquals(2, Striping.workRequests(Striping.MAX_WORK_REQUEST + 1));
        assertEquals(3, Striping.workRequests(3 * Striping.MAX_WORK_REQUEST));
    }

    // ---- Immediates.

    @Test
    void immediatesRoundTripTheirTypeAndPayload() {
        int[] slots = {0, 1, 4095, Immediate.MAX_SLOTS - 1};
        int[] generations = {1, 2, 1023, 1024, 0x7FFFFFFF};
        for (int slot : slots) {
            for (int g : generations) {
                int d = Immediate.data(slot, g);
                assertEquals(Immediate.DATA, Immediate.type(d));
                assertEquals(slot, Immediate.slot(d));
                assertEquals(g & Immediate.GENERATION_MASK, Immediate.generation(d));
                int e = Immediate.error(slot, g);
                assertEquals(Immediate.ERROR, Immediate.type(e));
                assertEquals(slot, Immediate.slot(e));
                assertEquals(g & Immediate.GENERATION_MASK, Immediate.generation(e));
            }
        }
        for (long index : new long[] {0, 1, 127, 128, (1L << 30) - 1, 1L << 30, (1L << 40) + 5}) {
            int u = Immediate.user(index);
            assertEquals(Immediate.USER, Immediate.type(u));
            assertEquals(index & Immediate.INDEX_MASK, Immediate.ringIndex(u));
            // the ring slot the receiver derives is the one the sender staged the value in
            assertEquals(index % VerbsConnection.RECV_DEPTH, Immediate.ringIndex(u) % VerbsConnection.RECV_DEPTH);
        }
        for (long index : new long[] {0, 15, 16, (1L << 30) + 3}) {
            int e = Immediate.eager(index);
            assertEquals(Immediate.EAGER, Immediate.type(e));
            assertEquals(index % VerbsConnection.EAGER_SLOTS, Immediate.ringIndex(e) % VerbsConnection.EAGER_SLOTS);
        }
        assertThrows(IllegalArgumentException.class, () -> Immediate.data(Immediate.MAX_SLOTS, 1));
        assertThrows(IllegalArgumentException.class, () -> Immediate.error(-1, 1));
    }

    // ---- CTS fifo.

    /** The receiver's window checks of the peer's ring indexes hold across the 30-bit wrap. */
    @Test
    void ringIndexesAreMeasuredFromTheOneDueAcrossTheWrap() {
        long due = (1L << 30) - 2; // the next due is the last but one index before the wrap
        assertEquals(0, Immediate.ahead(Immediate.ringIndex(Immediate.eager(due)), due));
        assertEquals(3, Immediate.ahead(Immediate.ringIndex(Immediate.user(due + 3)), due), "past the wrap");
        assertTrue(Immediate.ahead(Immediate.ringIndex(Immediate.user(due - 1)), due) >= 128, "one already delivered");
        long later = 5L << 30; // counts keep going past many wraps
        assertEquals(127, Immediate.ahead(Immediate.ringIndex(Immediate.user(later + 127)), later));
        assertTrue(Immediate.ahead(Immediate.ringIndex(Immediate.user(later + 128)), later) >= 128, "beyond the window");
    }

    @Test
    void ctsEntriesAreSeenOnlyWithTheirOwnSequence() {
        ControlLayout layout = new ControlLayout(2, 4, 8, 2, 100);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(layout.size, 64);
            long at = layout.ctsEntry(layout.ctsIn, 5); // sequence index 5 -> slot 1
            assertEquals(layout.ctsIn + CtsEntry.BYTES, at);
            assertFalse(CtsEntry.holds(s, at, 6), "zeroed memory holds no entry");
            CtsEntry.write(s, at, 2, 0x1000, 10, 7, 3, 4, 5); // round 0 of that slot (index 1)
            assertFalse(CtsEntry.holds(s, at, 6), "an entry of the previous round is not the awaited one");
            CtsEntry.write(s, at, 6, 0x7F00_0000_1234L, (1L << 33) + 1, 0xCAFE_F00D, -9, 77, 123_456);
            assertTrue(CtsEntry.holds(s, at, 6));
            assertEquals(0x7F00_0000_1234L, CtsEntry.address(s, at));
            assertEquals((1L << 33) + 1, CtsEntry.capacity(s, at));
            assertEquals(0xCAFE_F00D, CtsEntry.rkey(s, at));
            assertEquals(-9, CtsEntry.tag(s, at));
            assertEquals(77, CtsEntry.slot(s, at));
            assertEquals(123_456, CtsEntry.generation(s, at));
            assertTrue(CtsEntry.SEQUENCE + 8 <= CtsEntry.BYTES, "the sequence is inside the entry");
        }
    }

    @Test
    void controlAreasAreDisjointAndCacheLineAligned() {
        for (int qps : new int[] {1, 4, 128}) {
            ControlLayout l = new ControlLayout(qps, VerbsConnection.CTS_DEPTH, VerbsConnection.RECV_DEPTH,
                    VerbsConnection.EAGER_SLOTS, VerbsConnection.EAGER_BYTES);
            long[][] areas = {
                {l.ctsIn, (long) l.ctsDepth * CtsEntry.BYTES}, {l.creditsIn, l.creditsBytes()}, {l.immIn, l.ringSize * 8L},
                {l.ctsOut, (long) l.ctsDepth * CtsEntry.BYTES}, {l.creditsOut, l.creditsBytes()}, {l.immOut, l.ringSize * 8L},
                {l.eagerIn, l.eagerSlots * l.eagerStride}, {l.eagerOut, l.eagerSlots * l.eagerStride},
                {l.keepalive, 64},
            };
            for (int i = 0; i < areas.length; i++) {
                assertEquals(0, areas[i][0] % 64, "area " + i + " is not cache-line aligned");
                assertTrue(areas[i][0] + areas[i][1] <= l.size, "area " + i + " ends outside the region");
                for (int j = i + 1; j < areas.length; j++) {
                    boolean apart = areas[i][0] + areas[i][1] <= areas[j][0] || areas[j][0] + areas[j][1] <= areas[i][0];
                    assertTrue(apart, "areas " + i + " and " + j + " overlap with " + qps + " QPs");
                }
            }
            assertEquals(l.immIn + 8 * 3, l.immSlot(l.immIn, l.ringSize + 3L));
            assertEquals(l.eagerOut + 2 * l.eagerStride, l.eagerSlot(l.eagerOut, l.eagerSlots + 2L));
            assertEquals(0, l.eagerStride % 64, "eager slots are cache-line aligned");
            assertTrue(l.eagerStride >= EagerHeader.BYTES + l.eagerBytes, "an eager slot holds its header and payload");
        }
    }

    // ---- Credits, against a simulated peer.

    /**
     * A sender and a receiver connection, each with its Credits, exchanging reports through
     * "RDMA writes" of the counter block. Randomly interleaved, the sender never has more
     * write-with-immediates in flight on a QP than the receiver has receives posted (so no RNR),
     * never overwrites a CTS fifo slot the other side has not consumed, and everything flows.
     */
    @Test
    void creditsNeverOverrunThePeerAndNeverDeadlock() {
        int qps = 3;
        int depth = 8;
        int fifo = 4;
        Credits sender = new Credits(qps, depth, fifo, 2, 8);
        Credits receiver = new Credits(qps, depth, fifo, 2, 8);
        ControlLayout layout = new ControlLayout(qps, fifo, depth, 2, 64);
        Random random = new Random(7);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment senderMemory = arena.allocate(layout.size, 64);
            MemorySegment receiverMemory = arena.allocate(layout.size, 64);
            int[] posted = new int[qps]; // receives the receiver has posted and not yet seen consumed
            java.util.Arrays.fill(posted, depth);
            int[] inFlight = new int[qps]; // write-with-immediates on the wire
            long ctsWanted = 500; // the receiver posts this many receives
            long ctsWritten = 0;
            long ctsUnconsumed = 0;
            long messagesWanted = 2000;
            long messagesSent = 0;
            long messagesReceived = 0;
            int[] consumedButNotReposted = new int[qps];
            for (int step = 0; step < 200_000 && (messagesReceived < messagesWanted || ctsWritten < ctsWanted); step++) {
                switch (random.nextInt(5)) {
                    case 0 -> { // receiver writes a CTS entry into the sender's fifo
                        if (ctsWritten < ctsWanted && receiver.ctsWindowOpen()) {
                            receiver.takeCts();
                            ctsWritten++;
                            ctsUnconsumed++;
                            assertTrue(ctsUnconsumed <= fifo, "a CTS entry overwrote one the sender had not consumed");
                        }
                    }
                    case 1 -> { // sender consumes its fifo
                        while (ctsUnconsumed > 0 && random.nextBoolean()) {
                            ctsUnconsumed--;
                            sender.consumedCts();
                        }
                    }
                    case 2 -> { // sender sends a message: one write-with-immediate on every QP
                        if (messagesSent < messagesWanted && sender.immediateCreditOnEvery()) {
                            for (int q = 0; q < qps; q++) {
                                sender.takeImmediate(q);
                                inFlight[q]++;
                                assertTrue(inFlight[q] <= posted[q], "QP " + q + ": a write-with-immediate found no receive (RNR)");
                            }
                            messagesSent++;
                        }
                    }
                    case 3 -> { // receiver polls completions on a random QP
                        int q = random.nextInt(qps);
                        if (inFlight[q] > 0) {
                            inFlight[q]--;
                            posted[q]--;
                            consumedButNotReposted[q]++;
                            if (q == qps - 1) {
                                messagesReceived++;
                            }
                        }
                    }
                    default -> { // both flush: re-post receives, exchange reports
                        for (int q = 0; q < qps; q++) {
                            posted[q] += consumedButNotReposted[q];
                            receiver.reposted(q, consumedButNotReposted[q]);
                            consumedButNotReposted[q] = 0;
                        }
                        if (receiver.reportDue()) {
                            receiver.writeReport(receiverMemory, layout.creditsOut);
                            MemorySegment.copy(receiverMemory, layout.creditsOut, senderMemory, layout.creditsIn, layout.creditsBytes());
                        }
                        if (sender.reportDue()) {
                            sender.writeReport(senderMemory, layout.creditsOut);
                            MemorySegment.copy(senderMemory, layout.creditsOut, receiverMemory, layout.creditsIn, layout.creditsBytes());
                        }
                        sender.observe(senderMemory, layout.creditsIn);
                        receiver.observe(receiverMemory, layout.creditsIn);
                        assertFalse(sender.reportDue() || receiver.reportDue());
                    }
                }
            }
            assertEquals(messagesWanted, messagesReceived, "messages stalled: credits never came back");
            assertEquals(ctsWanted, ctsWritten, "CTS entries stalled: the window never reopened");
        }
    }

    @Test
    void takingCreditsThatAreNotThereFailsLoudly() {
        Credits c = new Credits(1, 2, 1, 1, 2);
        c.takeImmediate(0);
        c.takeImmediate(0);
        assertFalse(c.immediateCredit(0));
        assertThrows(IllegalStateException.class, () -> c.takeImmediate(0));
        c.observe(1, 1); // the peer re-posted one receive
        assertTrue(c.immediateCredit(0));
        c.observe(1, 0); // a stale report changes nothing
        assertTrue(c.immediateCredit(0));
        assertEquals(1, c.immediatesInFlight(0));
        assertEquals(0, c.takeCts());
        assertThrows(IllegalStateException.class, c::takeCts);
        assertEquals(0, c.takeEager());
        assertFalse(c.eagerSlotFree());
        assertThrows(IllegalStateException.class, c::takeEager);
        c.observe(2, 1); // the peer freed its eager slot
        assertEquals(1, c.takeEager());
        assertEquals(0, c.takeUserImmediate());
        assertEquals(1, c.takeUserImmediate());
        assertFalse(c.userRingFree(), "the peer holds two values its application has not polled");
        assertThrows(IllegalStateException.class, c::takeUserImmediate);
        c.observe(3, 1); // its application polled one
        assertEquals(2, c.takeUserImmediate());
    }

    /**
     * Reports are written once a quarter of a window is owed, not for every message (each is a
     * packet), and a sender that exhausted a window always leaves the peer owing a report.
     */
    @Test
    void creditReportsWaitForAQuarterOfAWindow() {
        int qps = 2;
        Credits c = new Credits(qps, 8, 4, 16, 8);
        assertFalse(c.reportDue());
        c.reposted(1, 1);
        assertFalse(c.reportDue(), "one re-posted receive of 8 is not worth a packet");
        c.reposted(1, 1);
        assertTrue(c.reportDue(), "a quarter of the receive window is owed");
        ControlLayout l = new ControlLayout(qps, 4, 8, 16, 64);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(l.size, 64);
            c.writeReport(s, l.creditsOut);
            assertFalse(c.reportDue());
            assertEquals(2, s.get(java.lang.foreign.ValueLayout.JAVA_LONG, l.creditsOut + 8L * 2));
            c.consumedCts();
            assertTrue(c.reportDue(), "a quarter of a CTS fifo of 4 is one entry");
            c.writeReport(s, l.creditsOut);
            c.eagerFreed(3);
            assertFalse(c.reportDue());
            c.eagerFreed(4);
            assertTrue(c.reportDue(), "a quarter of 16 eager slots freed");
            c.writeReport(s, l.creditsOut);
            assertEquals(4, s.get(java.lang.foreign.ValueLayout.JAVA_LONG, l.creditsOut + 8L * (1 + qps)));
            c.polledImmediate();
            assertFalse(c.reportDue());
            c.polledImmediate();
            assertTrue(c.reportDue(), "a quarter of a user ring of 8 polled");
            c.writeReport(s, l.creditsOut);
            assertEquals(2, s.get(java.lang.foreign.ValueLayout.JAVA_LONG, l.creditsOut + 8L * (2 + qps)));
            assertTrue(l.creditsOut + l.creditsBytes() <= l.immOut, "the report's block ends before the ring");
        }
        // A sender whose receive window is exhausted has made the peer owe a whole window.
        Credits sender = new Credits(1, 8, 4, 16, 8);
        Credits receiver = new Credits(1, 8, 4, 16, 8);
        for (int i = 0; i < 8; i++) {
            sender.takeImmediate(0);
        }
        assertFalse(sender.immediateCredit(0));
        receiver.reposted(0, 8);
        assertTrue(receiver.reportDue());
    }

    // ---- Endpoint descriptors.

    private static ConnectionDescriptor descriptor(int rank, int qps, byte[] gid) {
        return descriptor(rank, qps, gid, new byte[] {10, 0, 0, 7}, 40_123);
    }

    private static ConnectionDescriptor descriptor(int rank, int qps, byte[] gid, byte[] livenessHost, int livenessPort) {
        int[] qpns = new int[qps];
        int[] psns = new int[qps];
        for (int i = 0; i < qps; i++) {
            qpns[i] = 17 + i;
            psns[i] = 0xABCDE + i;
        }
        return new ConnectionDescriptor(rank, qpns, psns, 0, gid, 1024, VerbsConnection.CTS_DEPTH,
                VerbsConnection.RECV_DEPTH, 0x7F12_3456_7000L, 0x1234, 0x7F00_0000_0040L, 0x4321, livenessHost, livenessPort);
    }

    @Test
    void descriptorsRoundTripThroughBytes() {
        byte[] gid = new byte[16];
        gid[10] = (byte) 0xff;
        gid[11] = (byte) 0xff;
        gid[12] = (byte) 198;
        gid[15] = 1;
        ConnectionDescriptor d = descriptor(3, 4, gid);
        ConnectionDescriptor back = ConnectionDescriptor.fromBytes(3, d.toBytes());
        assertEquals(d, back);
        assertArrayEquals(gid, back.gid());
        assertEquals(4, back.qps());
        assertArrayEquals(new byte[] {10, 0, 0, 7}, back.livenessHost());
        assertEquals(40_123, back.livenessPort());
        ConnectionDescriptor ib = descriptor(2, 1, null, new byte[16], 1);
        ConnectionDescriptor ibBack = ConnectionDescriptor.fromBytes(2, ib.toBytes());
        assertNull(ibBack.gid());
        assertEquals(ib, ibBack);
        ConnectionDescriptor noListener = descriptor(1, 1, gid, new byte[0], 0);
        assertEquals(0, ConnectionDescriptor.fromBytes(1, noListener.toBytes()).livenessPort());
        assertThrows(IllegalArgumentException.class, () -> descriptor(1, 1, gid, new byte[0], 5));
        assertThrows(IllegalArgumentException.class, () -> descriptor(1, 1, gid, new byte[] {1, 2, 3}, 5));
    }

    @Test
    void incompatibleOrMalformedDescriptorsNameThePeer() {
        ConnectionDescriptor mine = descriptor(0, 4, new byte[16]);
        TransportException qps = assertThrows(TransportException.class,
                () -> descriptor(1, 2, new byte[16]).checkCompatible(1, mine));
        assertEquals(1, qps.peer());
        assertTrue(qps.getMessage().contains("RDMA4J_IB_QPS_PER_CONNECTION"), qps.getMessage());
        TransportException address = assertThrows(TransportException.class,
                () -> descriptor(1, 4, null).checkCompatible(1, mine));
        assertTrue(address.getMessage().contains("LID"), address.getMessage());
        TransportException wrongRank = assertThrows(TransportException.class,
                () -> descriptor(5, 4, new byte[16]).checkCompatible(1, mine));
        assertTrue(wrongRank.getMessage().contains("rank 5"), wrongRank.getMessage());
        TransportException garbage = assertThrows(TransportException.class,
                () -> ConnectionDescriptor.fromBytes(7, new byte[] {1, 2, 3}));
        assertEquals(7, garbage.peer());
        assertTrue(garbage.getMessage().contains("peer 7"), garbage.getMessage());
        // version 5 receivers did not preset their mailbox word, on which a send that fills its
        // receive now relies for its size: such a peer must fail at connect, not report size 0
        byte[] v5 = mine.toBytes();
        java.nio.ByteBuffer.wrap(v5).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(4, 5);
        TransportException old = assertThrows(TransportException.class, () -> ConnectionDescriptor.fromBytes(2, v5));
        assertEquals(2, old.peer());
        assertTrue(old.getMessage().contains("version"), old.getMessage());
    }

    // ---- Buffer pool size classes.

    @Test
    void poolSizeClassesArePowersOfTwoFromFourKibibytes() {
        assertEquals(12, BufferPool.sizeShift(0));
        assertEquals(12, BufferPool.sizeShift(1));
        assertEquals(12, BufferPool.sizeShift(4096));
        assertEquals(13, BufferPool.sizeShift(4097));
        assertEquals(20, BufferPool.sizeShift(1 << 20));
        assertEquals(21, BufferPool.sizeShift((1 << 20) + 3));
        assertEquals(BufferPool.MAX_SMALL_SHIFT, BufferPool.sizeShift(1L << BufferPool.MAX_SMALL_SHIFT));
        assertEquals(-1, BufferPool.sizeShift((1L << BufferPool.MAX_SMALL_SHIFT) + 1), "large blocks get a region of their own");
        assertTrue((1L << BufferPool.MAX_SMALL_SHIFT) <= BufferPool.CHUNK, "the largest small class fits a chunk");
    }

    @Test
    void requestIdsDoNotOutliveTheirSlot() {
        RequestTable t = new RequestTable(4);
        int s = t.allocate(RequestTable.RECV, 1, null, 0, 8);
        long id = t.id(s);
        assertEquals(s, t.pendingSlot(id));
        t.complete(s, 8);
        assertEquals(-1, t.pendingSlot(id));
        assertEquals(s, t.slot(id));
        t.release(s);
        assertEquals(-1, t.slot(id));
        int again = t.allocate(RequestTable.SEND, 1, null, 0, 8);
        assertEquals(s, again, "the slot is reused");
        assertEquals(-1, t.slot(id), "but the old id does not match it");
        assertThrows(IllegalArgumentException.class, () -> new RequestTable(Immediate.MAX_SLOTS + 1));
    }

    /** A send queue holds no more than was asked for, nor than the CQ it shares with the receives has room for. */
    @Test
    void sendQueuesStayWithinTheCompletionQueue() {
        int receives = VerbsConnection.RECV_DEPTH + 1;
        assertEquals(255, VerbsConnection.sendDepth(256, 511, 1, receives), "rxe: 511 entries for 387 asked");
        for (int qps = 1; qps <= 4; qps++) {
            for (int cq : new int[] {qps * (256 + receives + 2), 4096, 500 * qps}) {
                int depth = VerbsConnection.sendDepth(256, cq, qps, receives);
                assertTrue(depth <= 255, "asked for 256 less the drain marker: " + depth);
                assertTrue(qps * (depth + 1 + receives) <= cq, qps + " QPs, CQ of " + cq + ": depth " + depth);
            }
        }
        assertThrows(TransportException.class, () -> VerbsConnection.sendDepth(256, 100, 1, receives));
    }
}
