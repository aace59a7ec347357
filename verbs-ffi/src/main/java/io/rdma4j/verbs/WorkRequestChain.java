package io.rdma4j.verbs;

import io.rdma4j.nativesupport.internal.Checks;
import io.rdma4j.verbs.ffi.ibv_sge;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * The part ibv_send_wr and ibv_recv_wr chains share: an off-heap array of work requests whose
 * {@code next} pointers are linked once at construction and whose scatter/gather lists sit in a
 * second array, {@code maxSge} entries per request. A batch is filled by patching fields in place
 * and posted as one chain (one doorbell); nothing is allocated per batch.
 */
abstract sealed class WorkRequestChain implements AutoCloseable permits SendWorkRequests, RecvWorkRequests {
    private static final long SGE_STRIDE = ibv_sge.sizeof();
    private static final long SGE_ADDR = ibv_sge.addr$offset();
    private static final long SGE_LENGTH = ibv_sge.length$offset();
    private static final long SGE_LKEY = ibv_sge.lkey$offset();
    private static final ValueLayout.OfLong SGE_ADDR_LAYOUT = ibv_sge.addr$layout();
    private static final ValueLayout.OfInt SGE_INT_LAYOUT = ibv_sge.length$layout();
    /** A pointer field, or the leading uint64 wr_id, accessed as a 64-bit integer. */
    private static final ValueLayout.OfLong POINTER = ValueLayout.JAVA_LONG;

    private final String kind;
    private final Arena arena = Arena.ofShared();
    final MemorySegment wrs;
    private final MemorySegment sges;
    final long stride;
    private final long wrIdOffset;
    private final long nextOffset;
    private final long numSgeOffset;
    private final MemorySegment zeros;
    private final ValueLayout.OfInt numSgeLayout;
    private final int capacity;
    private final int maxSge;
    private int count;

    WorkRequestChain(String kind, int capacity, int maxSge, GroupLayout wrLayout, long wrIdOffset, long nextOffset,
                     AddressLayout pointer, long sgListOffset, long numSgeOffset, ValueLayout.OfInt numSgeLayout) {
        this.kind = kind;
        this.capacity = Checks.inRange("capacity", capacity, 1, 1 << 16);
        this.maxSge = Checks.inRange("maxSge", maxSge, 1, 64);
        this.stride = wrLayout.byteSize();
        this.nextOffset = nextOffset;
        this.numSgeOffset = numSgeOffset;
        if (Math.max(wrIdOffset, Math.max(nextOffset, sgListOffset)) >= numSgeOffset) {
            throw new IllegalStateException("unexpected " + kind + " layout: wr_id, next and sg_list must precede num_sge");
        }
        this.wrIdOffset = wrIdOffset;
        if (pointer.byteSize() != Long.BYTES) {
            throw new UnsupportedOperationException("rdma4j needs a 64-bit platform");
        }
        this.numSgeLayout = numSgeLayout;
        this.wrs = arena.allocate(stride * capacity, wrLayout.byteAlignment());
        this.sges = arena.allocate(SGE_STRIDE * capacity * maxSge, ibv_sge.layout().byteAlignment());
        this.zeros = arena.allocate(stride - numSgeOffset);
        for (int i = 0; i < capacity; i++) {
            wrs.set(POINTER, i * stride + sgListOffset, sges.address() + i * maxSge * SGE_STRIDE);
            link(i);
        }
    }

    /** Points request i's next at request i+1 (the last one at NULL). Pointers are written as
     * 64-bit integers so that no MemorySegment is created on the posting path. */
    private void link(int i) {
        wrs.set(POINTER, i * stride + nextOffset, i + 1 < capacity ? wrs.address() + (i + 1) * stride : 0L);
    }

    public final int capacity() {
        return capacity;
    }

    public final int maxSge() {
        return maxSge;
    }

    /** Work requests in the current batch. */
    public final int count() {
        return count;
    }

    /** Empties the batch; the memory and links are kept for the next one. */
    public final void reset() {
        count = 0;
    }

    /** Appends a zeroed work request; returns its index for the patch methods. */
    final int append(long wrId) {
        if (count == capacity) {
            throw new IllegalStateException(kind + " batch is full (capacity " + capacity
                    + "); post it or reset() before adding more");
        }
        int i = count++;
        long wr = i * stride;
        // Everything from num_sge on is zeroed; wr_id, next and sg_list come first and stay linked.
        MemorySegment.copy(zeros, 0, wrs, wr + numSgeOffset, zeros.byteSize());
        wrs.set(POINTER, wr + wrIdOffset, wrId);
        return i;
    }

    public final long wrId(int wr) {
        return wrs.get(POINTER, offsetOf(wr) + wrIdOffset);
    }

    /** Number of scatter/gather entries of request {@code wr}. */
    public final int sgeCount(int wr) {
        return wrs.get(numSgeLayout, offsetOf(wr) + numSgeOffset);
    }

    /** The bytes that request {@code wr}'s scatter/gather entries cover, summed. */
    public final long payloadBytes(int wr) {
        long total = 0;
        for (int i = 0, n = sgeCount(wr); i < n; i++) {
            total += Integer.toUnsignedLong(sges.get(SGE_INT_LAYOUT, (wr * (long) maxSge + i) * SGE_STRIDE + SGE_LENGTH));
        }
        return total;
    }

    /** Changes the id of request {@code wr} in place. */
    public final void setWrId(int wr, long wrId) {
        wrs.set(POINTER, offsetOf(wr) + wrIdOffset, wrId);
    }

    final long offsetOf(int wr) {
        Objects.checkIndex(wr, count);
        return wr * stride;
    }

    /** Adds a scatter/gather entry to work request {@code wr}. */
    public final void addSge(int wr, long address, long length, int lkey) {
        long base = offsetOf(wr);
        int n = wrs.get(numSgeLayout, base + numSgeOffset);
        if (n == maxSge) {
            throw new IllegalStateException(kind + " work request " + wr + " already has its maximum of " + maxSge
                    + " scatter/gather entries");
        }
        Checks.uint32("length", length);
        long sge = (wr * (long) maxSge + n) * SGE_STRIDE;
        sges.set(SGE_ADDR_LAYOUT, sge + SGE_ADDR, address);
        sges.set(SGE_INT_LAYOUT, sge + SGE_LENGTH, (int) length);
        sges.set(SGE_INT_LAYOUT, sge + SGE_LKEY, lkey);
        wrs.set(numSgeLayout, base + numSgeOffset, n + 1);
    }

    /** Adds {@code length} bytes at {@code offset} of a registered region as a scatter/gather entry. */
    public final void addSge(int wr, MemoryRegion mr, long offset, long length) {
        Objects.checkFromIndexSize(offset, length, mr.length());
        addSge(wr, mr.address() + offset, length, mr.lkey());
    }

    /** Changes the length of SGE {@code sge} of request {@code wr} in place (e.g. per message size). */
    public final void setSgeLength(int wr, int sge, long length) {
        long base = offsetOf(wr);
        Objects.checkIndex(sge, wrs.get(numSgeLayout, base + numSgeOffset));
        sges.set(SGE_INT_LAYOUT, (wr * (long) maxSge + sge) * SGE_STRIDE + SGE_LENGTH, (int) Checks.uint32("length", length));
    }

    /** Terminates the chain after the last request of the batch; returns its head. */
    final MemorySegment terminate() {
        if (count == 0) {
            throw new IllegalStateException(kind + " batch is empty; add work requests before posting");
        }
        wrs.set(POINTER, (count - 1) * stride + nextOffset, 0L);
        return wrs;
    }

    /** Restores the link that {@link #terminate} cut, so the arrays stay fully linked. */
    final void relink() {
        link(count - 1);
    }

    /** Index of the request at {@code address} (a bad_wr a provider reported), -1 if not ours. */
    final int indexOf(long address) {
        long off = address - wrs.address();
        return off < 0 || off >= count * stride || off % stride != 0 ? -1 : (int) (off / stride);
    }

    @Override
    public final void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
