package io.rdma4j.transport.shm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The table of a rank's remotely accessible regions, in its control file. It is the shared-memory
 * counterpart of the NIC's memory-region table: a peer may only write into or read from bytes
 * that the owner published here, and every offset and length a peer is given (by a
 * {@link io.rdma4j.transport.RemoteBuffer} or a clear-to-send entry) is checked against it first.
 *
 * <p>Entry: {@code key | slab | offset | length} (4 longs). The key is
 * {@code generation << 32 | (index + 1)}, 0 for a free entry, so a descriptor of a freed and
 * reused entry no longer resolves. The owner publishes the key last with a release-store and
 * clears it first on free; a reader checks the key before and after reading the entry.
 */
final class RegionTable {
    static final int MAX_CAPACITY = 1 << 20;
    /** Upper bound of a slab index, so a corrupt entry cannot make a reader map absurd files. */
    static final int MAX_SLABS = 1 << 16;
    /** {@link #resolve} result: the key does not name a live region. */
    static final int STALE = -1;
    /** {@link #resolve} result: the bytes lie outside the region. */
    static final int OUT_OF_BOUNDS = -2;

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final long KEY = 0;
    private static final long SLAB = 8;
    private static final long OFFSET = 16;
    private static final long LENGTH = 24;

    private final MemorySegment file;
    private final long base;
    private final int capacity;

    RegionTable(MemorySegment file, ShmLayout layout) {
        this.file = file;
        this.base = layout.regionTableOffset;
        this.capacity = layout.regionCapacity;
    }

    int capacity() {
        return capacity;
    }

    static long key(int index, int generation) {
        return ((long) generation << 32) | (index + 1L);
    }

    // ---- owner side

    void publish(int index, long key, int slab, long offset, long length) {
        long e = entry(index);
        // a slot reused after clear(): its key must read 0 before any new field is seen, or a
        // reader could meet the old key on both sides of the new fields and accept them; a
        // release orders only what came before it (no reordering to stop on x86, but on aarch64)
        VarHandle.storeStoreFence();
        file.set(ValueLayout.JAVA_LONG, e + SLAB, slab);
        file.set(ValueLayout.JAVA_LONG, e + OFFSET, offset);
        file.set(ValueLayout.JAVA_LONG, e + LENGTH, length);
        LONG.setRelease(file, e + KEY, key);
    }

    void clear(int index) {
        LONG.setRelease(file, entry(index) + KEY, 0L);
    }

    // ---- reader side (any process)

    /**
     * The slab holding {@code [address, address + length)} of region {@code key} (addresses are
     * slab offsets), or {@link #STALE} / {@link #OUT_OF_BOUNDS}.
     */
    int resolve(long key, long address, long length) {
        long index = (key & 0xFFFF_FFFFL) - 1;
        if (index < 0 || index >= capacity) {
            return STALE;
        }
        long e = entry((int) index);
        if ((long) LONG.getAcquire(file, e + KEY) != key) {
            return STALE;
        }
        long slab = file.get(ValueLayout.JAVA_LONG, e + SLAB);
        long offset = file.get(ValueLayout.JAVA_LONG, e + OFFSET);
        long regionLength = file.get(ValueLayout.JAVA_LONG, e + LENGTH);
        VarHandle.loadLoadFence();
        if ((long) LONG.getAcquire(file, e + KEY) != key || slab < 0 || slab >= MAX_SLABS) {
            return STALE;
        }
        if (address < offset || length < 0 || regionLength < 0
                || address - offset > regionLength || length > regionLength - (address - offset)) {
            return OUT_OF_BOUNDS;
        }
        return (int) slab;
    }

    private long entry(int index) {
        return base + (long) index * ShmLayout.REGION_ENTRY;
    }
}
