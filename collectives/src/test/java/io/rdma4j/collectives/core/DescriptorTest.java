package io.rdma4j.collectives.core;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.BiPredicate;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The descriptor's 32 bytes on the wire and the comparison a receiver makes with them. */
class DescriptorTest {

    private static Descriptor sample() {
        Descriptor d = new Descriptor().set(CollectiveKind.BROADCAST, DataType.F64, ReduceOp.MAX, 123_456_789_012L, 3,
                2, 0x0102_0304_0506_0708L);
        d.sender = 7;
        return d;
    }

    @Test
    void theWireLayoutIsLittleEndianFieldByField() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(Descriptor.BYTES + 3);
            Descriptor d = sample();
            d.write(s, 3); // unaligned on purpose
            ValueLayout.OfInt i = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
            ValueLayout.OfLong l = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
            assertEquals('R', (char) s.get(ValueLayout.JAVA_BYTE, 3)); // the magic reads "R4JC"
            assertEquals('4', (char) s.get(ValueLayout.JAVA_BYTE, 4));
            assertEquals('J', (char) s.get(ValueLayout.JAVA_BYTE, 5));
            assertEquals('C', (char) s.get(ValueLayout.JAVA_BYTE, 6));
            assertEquals(CollectiveKind.BROADCAST.ordinal(), s.get(ValueLayout.JAVA_BYTE, 7));
            assertEquals(DataType.F64.code(), s.get(ValueLayout.JAVA_BYTE, 8));
            assertEquals(ReduceOp.MAX.code(), s.get(ValueLayout.JAVA_BYTE, 9));
            assertEquals(2, s.get(ValueLayout.JAVA_BYTE, 10));
            assertEquals(0x0102_0304_0506_0708L, s.get(l, 11));
            assertEquals(8, s.get(ValueLayout.JAVA_BYTE, 11)); // low byte first
            assertEquals(123_456_789_012L, s.get(l, 19));
            assertEquals(3, s.get(i, 27));
            assertEquals(7, s.get(i, 31));
        }
    }

    @Test
    void readGivesBackWhatWasWrittenNegativeCodesIncluded() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(Descriptor.BYTES);
            Descriptor barrier = new Descriptor().set(CollectiveKind.BARRIER, null, null, 0, -1, -1, 42);
            barrier.sender = 5;
            barrier.write(s, 0);
            Descriptor back = Descriptor.read(s, 0, Descriptor.BYTES);
            assertEquals(CollectiveKind.BARRIER, back.kind);
            assertEquals(-1, back.dtype);
            assertEquals(-1, back.op);
            assertEquals(-1, back.algo);
            assertEquals(42, back.seq);
            assertEquals(0, back.count);
            assertEquals(-1, back.root);
            assertEquals(5, back.sender);
            assertTrue(barrier.matches(s, 0, Descriptor.BYTES));
            assertNull(Descriptor.read(s, 0, Descriptor.BYTES - 1));
        }
    }

    /**
     * Writes {@link #sample()} changed in one compared field at a time into {@code s} with
     * {@code write}; {@code matches} must tell each apart from the sample, and must not tell
     * apart one that differs in its sender only.
     */
    private static void everyComparedFieldCounts(MemorySegment s, BiConsumer<Descriptor, MemorySegment> write,
                                                 BiPredicate<Descriptor, MemorySegment> matches) {
        List<Consumer<Descriptor>> changes = List.of(
                d -> d.kind = CollectiveKind.ALL_REDUCE,
                d -> d.dtype = DataType.F32.code(),
                d -> d.op = ReduceOp.SUM.code(),
                d -> d.algo = 1,
                d -> d.seq++,
                d -> d.count--,
                d -> d.root = 0);
        Descriptor mine = sample();
        write.accept(mine, s);
        assertTrue(matches.test(mine, s));
        for (int c = 0; c < changes.size(); c++) {
            Descriptor theirs = sample();
            changes.get(c).accept(theirs);
            write.accept(theirs, s);
            assertFalse(matches.test(mine, s), "change " + c + " went unnoticed");
        }
        Descriptor otherSender = sample();
        otherSender.sender = 0;
        write.accept(otherSender, s);
        assertTrue(matches.test(mine, s), "the sender is not compared");
    }

    @Test
    void everyComparedFieldThatDiffersIsAMismatchAndTheSenderIsNot() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(Descriptor.BYTES);
            Descriptor mine = sample();
            everyComparedFieldCounts(s, (d, seg) -> d.write(seg, 0), (d, seg) -> d.matchesHeader(seg, 0));
            assertFalse(mine.matches(s, 0, Descriptor.BYTES + 1), "a longer message is no descriptor");
            s.set(ValueLayout.JAVA_BYTE, 0, (byte) 'X');
            assertFalse(mine.matchesHeader(s, 0), "a wrong magic");
        }
    }

    /** The shared window's 24-byte form: the same comparison without the magic, and what an error message reads back. */
    @Test
    void thePackedFormComparesTheSameFieldsAndReadsBack() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(Descriptor.PACKED_BYTES, 8);
            everyComparedFieldCounts(s, (d, seg) -> d.writePacked(seg, 0), (d, seg) -> d.matchesPacked(seg, 0));

            sample().writePacked(s, 0);
            Descriptor back = Descriptor.readPacked(s, 0);
            assertEquals(CollectiveKind.BROADCAST, back.kind);
            assertEquals(DataType.F64.code(), back.dtype);
            assertEquals(ReduceOp.MAX.code(), back.op);
            assertEquals(2, back.algo);
            assertEquals(0x0102_0304_0506_0708L, back.seq);
            assertEquals(123_456_789_012L, back.count);
            assertEquals(3, back.root);

            Descriptor barrier = new Descriptor().set(CollectiveKind.BARRIER, null, null, 0, -1, -1, 42);
            barrier.writePacked(s, 0);
            back = Descriptor.readPacked(s, 0);
            assertEquals(-1, back.dtype);
            assertEquals(-1, back.op);
            assertEquals(-1, back.algo);
            assertEquals(-1, back.root);
            assertTrue(barrier.matchesPacked(s, 0));
        }
    }
}
