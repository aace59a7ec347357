package io.rdma4j.collectives.core;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.collectives.reduce.Reducer;
import io.rdma4j.nativesupport.internal.BulkCopy;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.Transport;

import java.lang.foreign.MemorySegment;

/**
 * Turns a call's {@link MemorySegment} arguments into registered buffers and offsets: a native
 * segment is registered as it is (zero-copy; the transport caches the registration), a heap
 * segment is copied through registered scratch (and the result copied back by
 * {@link #finishOut}). Recognises the in-place layouts (same memory; reduce-scatter's receive
 * inside its send buffer; allgather's send inside its receive buffer) so that they stay in place.
 */
public final class Binder {
    private final Transport transport;
    private final Staging staging;

    public Binder(Transport transport, Staging staging) {
        this.transport = transport;
        this.staging = staging;
    }

    public void bindInOut(Call c, MemorySegment send, MemorySegment recv, long sendBytes, long recvBytes,
                           boolean copySendIn) {
        if (sameMemory(send, recv)) {
            // a read-only send view is never the one bound: the call writes its result through it
            MemorySegment larger = !send.isReadOnly() && send.byteSize() >= recv.byteSize() ? send : recv;
            c.send = c.recv = bind(larger, Math.max(sendBytes, recvBytes), 0, copySendIn);
            c.sendOff = c.recvOff = 0;
        } else {
            long delta = offsetWithin(recv, send);
            if (delta >= 0) { // send is a slice of recv (in-place reduce-scatter / allgather layouts)
                c.recv = bind(recv, Math.max(recvBytes, delta + sendBytes), 0, true);
                c.send = c.recv;
                c.sendOff = delta;
                c.recvOff = 0;
                return;
            }
            delta = offsetWithin(send, recv);
            if (delta >= 0) {
                c.send = bind(send, Math.max(sendBytes, delta + recvBytes), 0, true);
                c.recv = c.send;
                c.sendOff = 0;
                c.recvOff = delta;
                return;
            }
            c.send = bind(send, sendBytes, 0, copySendIn);
            c.recv = bind(recv, recvBytes, 1, false);
            c.sendOff = c.recvOff = 0;
        }
    }

    /**
     * A registered view of {@code seg}: the segment itself when native (a read-only view, a send
     * buffer, is a registration of its own: a later call receiving into the same memory gets a
     * writable one), else registered scratch.
     */
    public RegisteredBuffer bind(MemorySegment seg, long bytes, int scratchSlot, boolean copyIn) {
        if (seg.isNative() && bytes > 0) {
            return transport.register(seg);
        }
        RegisteredBuffer s = staging.scratch(scratchSlot, Math.max(bytes, 8));
        if (copyIn && bytes > 0) {
            MemorySegment.copy(seg, 0, s.segment(), 0, bytes);
        }
        return s;
    }

    /**
     * Makes {@code c} reduce its inputs divided by {@code n} ({@link ReduceOp#AVG} of
     * {@link io.rdma4j.collectives.DataType#F16}, summed afterwards): into its receive buffer,
     * which then serves as both (allreduce, a reduce's root: it holds as many elements as the
     * send buffer and gets the result anyway), else into a copy of the input in scratch slot 0
     * unless the input is one already (a heap argument), so the caller's send buffer stays as it
     * was. {@code userSend} is the segment the caller passed.
     */
    public void divideInputs(Call c, MemorySegment userSend, long sendCount, int n, boolean intoReceive) {
        RegisteredBuffer into = c.send;
        long intoOff = c.sendOff;
        if (intoReceive) {
            into = c.recv;
            intoOff = c.recvOff;
        } else if (userSend.isNative()) {
            into = staging.scratch(0, Math.max(c.type.bytes(sendCount), 8));
            intoOff = 0;
        }
        divideInto(c.send.segment(), c.sendOff, into.segment(), intoOff, sendCount, c.type, n);
        c.send = into;
        c.sendOff = intoOff;
    }

    /**
     * {@code count} elements of {@code type} from {@code src} at {@code srcOff}, divided by {@code n},
     * into {@code dst} at {@code dstOff} (in place when that is the same memory).
     */
    public static void divideInto(MemorySegment src, long srcOff, MemorySegment dst, long dstOff, long count,
                                  DataType type, int n) {
        long bytes = type.bytes(count);
        if (bytes > 0 && !sameMemoryAt(src, dst, dstOff - srcOff)) {
            BulkCopy.copy(src, srcOff, dst, dstOff, bytes);
        }
        Reducer.of(type, ReduceOp.AVG).finish(dst, dstOff, count, n);
    }

    /** Copies a scratch-staged result back into a heap destination. */
    public void finishOut(Call c, MemorySegment recv, long bytes) {
        if (bytes > 0 && !recv.isNative()) {
            MemorySegment.copy(c.recv.segment(), c.recvOff, recv, 0, bytes);
        }
    }

    /** Same start address in the same memory (sizes may differ): an in-place call. */
    public static boolean sameMemory(MemorySegment a, MemorySegment b) {
        return a == b || sameMemoryAt(a, b, 0);
    }

    /** Whether {@code a} starts at byte {@code offset} of {@code b}'s memory (no slice of {@code b} made). */
    public static boolean sameMemoryAt(MemorySegment a, MemorySegment b, long offset) {
        return a.isNative() == b.isNative() && a.address() == b.address() + offset && a.heapBase().equals(b.heapBase());
    }

    /** Whether the two segments share a byte; allocates nothing for native segments (asOverlappingSlice would). */
    public static boolean overlaps(MemorySegment a, MemorySegment b) {
        return overlapOffset(a, a.byteSize(), b, b.byteSize()) != DISJOINT;
    }

    /** What {@link #overlapOffset} returns for ranges that do not overlap. */
    public static final long DISJOINT = Long.MIN_VALUE;

    /**
     * Where the first {@code bBytes} of {@code b} start relative to {@code a} (in bytes, may be
     * negative) if they overlap the first {@code aBytes} of {@code a}, else {@link #DISJOINT}.
     * Allocates nothing for native segments.
     */
    public static long overlapOffset(MemorySegment a, long aBytes, MemorySegment b, long bBytes) {
        if (aBytes == 0 || bBytes == 0 || a.isNative() != b.isNative()
                || (!a.isNative() && !a.heapBase().equals(b.heapBase()))) {
            return DISJOINT;
        }
        long offset = b.address() - a.address();
        return offset < aBytes && -offset < bBytes ? offset : DISJOINT;
    }

    /** Byte offset of {@code inner} inside {@code outer} if it lies entirely within it, else -1. */
    private static long offsetWithin(MemorySegment outer, MemorySegment inner) {
        if (outer.isNative() != inner.isNative() || !outer.heapBase().equals(inner.heapBase())) {
            return -1;
        }
        long off = inner.address() - outer.address();
        return off >= 0 && off + inner.byteSize() <= outer.byteSize() && inner.byteSize() < outer.byteSize() ? off : -1;
    }

    public static void copyIfDistinct(MemorySegment send, MemorySegment recv, long bytes) {
        if (bytes > 0 && !sameMemory(send, recv)) {
            BulkCopy.copy(send, 0, recv, 0, bytes);
        }
    }
}
