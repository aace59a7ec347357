package io.rdma4j.transport.verbs;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * One clear-to-send entry, as a receiver RDMA-writes it into its sender's CTS fifo: where the
 * data may go (address, capacity, rkey), under which tag, and which receive request the data
 * completes. 64 bytes, one cache line. The sequence number ({@code k + 1} for the k-th entry of
 * a connection, so never 0 and different in each round of the fifo) is the last field: the sender
 * polls it, and the NIC places a small single-packet write in address order, as NCCL's CTS fifo
 * relies on too.
 */
final class CtsEntry {
    static final int BYTES = 64;
    static final long ADDRESS = 0;
    static final long CAPACITY = 8;
    static final long RKEY = 16;
    static final long TAG = 20;
    static final long SLOT = 24;
    static final long GENERATION = 28;
    static final long SEQUENCE = 56;

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    private static final VarHandle ORDERED_LONG = ValueLayout.JAVA_LONG.varHandle();

    private CtsEntry() {
    }

    /** Fills the entry at {@code at} (the sequence last, with release semantics). */
    static void write(MemorySegment s, long at, long sequence, long address, long capacity, int rkey, int tag,
                      int slot, int generation) {
        s.set(LONG, at + ADDRESS, address);
        s.set(LONG, at + CAPACITY, capacity);
        s.set(INT, at + RKEY, rkey);
        s.set(INT, at + TAG, tag);
        s.set(INT, at + SLOT, slot);
        s.set(INT, at + GENERATION, generation);
        ORDERED_LONG.setRelease(s, at + SEQUENCE, sequence);
    }

    /** Whether the entry at {@code at} holds sequence {@code sequence} (an acquiring read). */
    static boolean holds(MemorySegment s, long at, long sequence) {
        return acquire(s, at + SEQUENCE) == sequence;
    }

    /** An acquiring read of the 8-byte word at {@code offset}, for words a peer's NIC writes. */
    static long acquire(MemorySegment s, long offset) {
        return (long) ORDERED_LONG.getAcquire(s, offset);
    }

    static long address(MemorySegment s, long at) {
        return s.get(LONG, at + ADDRESS);
    }

    static long capacity(MemorySegment s, long at) {
        return s.get(LONG, at + CAPACITY);
    }

    static int rkey(MemorySegment s, long at) {
        return s.get(INT, at + RKEY);
    }

    static int tag(MemorySegment s, long at) {
        return s.get(INT, at + TAG);
    }

    static int slot(MemorySegment s, long at) {
        return s.get(INT, at + SLOT);
    }

    static int generation(MemorySegment s, long at) {
        return s.get(INT, at + GENERATION);
    }
}
