package io.rdma4j.transport.verbs;

import io.rdma4j.verbs.Access;
import io.rdma4j.verbs.MemoryRegion;
import io.rdma4j.verbs.ProtectionDomain;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The memory {@code Transport.allocate} hands out, registered once and reused: small requests
 * are rounded up to a power of two (4 KiB .. 8 MiB) and carved out of 32 MiB registered chunks;
 * larger ones get a registered region of their own, rounded up to 2 MiB. A freed block goes back
 * to the free list of its size, so a training loop that allocates and frees the same sizes
 * registers nothing after its first step. Memory is returned to the system only when the pool is
 * closed (after every QP that could touch it was destroyed).
 *
 * <p>With huge pages requested, regions are 2 MiB-page mappings (fewer IOMMU/MTT entries for the
 * NIC); if the system has none, the pool logs why once and uses normal pages. Not thread-safe.
 */
final class BufferPool implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(BufferPool.class.getName());
    static final long CHUNK = 32L << 20;
    static final int MIN_SHIFT = 12;
    static final int MAX_SMALL_SHIFT = 23;
    static final long LARGE_ROUNDING = 2L << 20;
    private static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;

    /** One registered area: a chunk or a large block's own region. */
    static final class Region {
        final MemorySegment memory;
        final MemoryRegion mr;
        final boolean hugePages;
        private final Arena arena;

        Region(MemorySegment memory, MemoryRegion mr, boolean hugePages, Arena arena) {
            this.memory = memory;
            this.mr = mr;
            this.hugePages = hugePages;
            this.arena = arena;
        }

        boolean contains(long address, long length) {
            long base = memory.address();
            return address >= base && length >= 0 && address - base <= memory.byteSize() - length;
        }

        void free() {
            mr.close();
            if (arena != null) {
                arena.close();
            } else {
                HugePages.unmap(memory);
            }
        }
    }

    /** A block handed out: {@code memory} is the whole (rounded) block. */
    static final class Block {
        final Region region;
        final MemorySegment memory;
        final int sizeShift;

        Block(Region region, MemorySegment memory, int sizeShift) {
            this.region = region;
            this.memory = memory;
            this.sizeShift = sizeShift;
        }
    }

    private final ProtectionDomain pd;
    private final boolean hugePages;
    private final String owner;
    private final List<Region> regions = new ArrayList<>();
    private final List<ArrayDeque<Block>> small = new ArrayList<>();
    private final Map<Long, ArrayDeque<Block>> large = new HashMap<>();
    private Region chunk;
    private long chunkUsed;
    private String hugePageFailure;
    private boolean closed;

    BufferPool(ProtectionDomain pd, boolean hugePages, String owner) {
        this.pd = pd;
        this.hugePages = hugePages;
        this.owner = owner;
        for (int i = 0; i <= MAX_SMALL_SHIFT; i++) {
            small.add(new ArrayDeque<>());
        }
    }

    /** The size class (log2 of the block size) for a request of {@code bytes}, or -1 when it is large. */
    static int sizeShift(long bytes) {
        if (bytes > 1L << MAX_SMALL_SHIFT) {
            return -1;
        }
        return Math.max(MIN_SHIFT, 64 - Long.numberOfLeadingZeros(Math.max(1, bytes) - 1));
    }

    Block allocate(long bytes) {
        if (closed) {
            throw new IllegalStateException("buffer pool of " + owner + " is closed");
        }
        int shift = sizeShift(bytes);
        if (shift < 0) {
            long rounded = Striping.alignUp(bytes, LARGE_ROUNDING);
            ArrayDeque<Block> free = large.get(rounded);
            if (free != null && !free.isEmpty()) {
                return free.poll();
            }
            Region r = newRegion(rounded);
            return new Block(r, r.memory, -1);
        }
        Block b = small.get(shift).poll();
        return b != null ? b : carve(shift);
    }

    void free(Block b) {
        if (b.sizeShift < 0) {
            large.computeIfAbsent(b.memory.byteSize(), k -> new ArrayDeque<>()).push(b);
        } else {
            small.get(b.sizeShift).push(b);
        }
    }

    private Block carve(int shift) {
        long size = 1L << shift;
        if (chunk == null || CHUNK - chunkUsed < size) {
            spillRestOfChunk();
            chunk = newRegion(CHUNK);
            chunkUsed = 0;
        }
        Block b = new Block(chunk, chunk.memory.asSlice(chunkUsed, size), shift);
        chunkUsed += size;
        return b;
    }

    /** Hands what is left of the current chunk to the free lists, largest blocks first. */
    private void spillRestOfChunk() {
        if (chunk == null) {
            return;
        }
        while (CHUNK - chunkUsed >= 1L << MIN_SHIFT) {
            int shift = Math.min(MAX_SMALL_SHIFT, 63 - Long.numberOfLeadingZeros(CHUNK - chunkUsed));
            small.get(shift).push(new Block(chunk, chunk.memory.asSlice(chunkUsed, 1L << shift), shift));
            chunkUsed += 1L << shift;
        }
    }

    private Region newRegion(long bytes) {
        MemorySegment memory = null;
        Arena arena = null;
        boolean huge = false;
        if (hugePages && hugePageFailure == null) {
            HugePages.Mapping m = HugePages.map(bytes);
            if (m.memory() != null) {
                memory = m.memory();
                huge = true;
            } else {
                hugePageFailure = m.failure();
                LOG.log(Level.INFO, owner + ": huge pages requested (RDMA4J_HUGE_PAGES) but unavailable, using 4 KiB pages: "
                        + hugePageFailure);
            }
        }
        if (memory == null) {
            arena = Arena.ofShared();
            try {
                memory = arena.allocate(bytes, 4096);
            } catch (RuntimeException | OutOfMemoryError e) {
                arena.close();
                throw e;
            }
        }
        MemoryRegion mr;
        try {
            mr = pd.register(memory, ACCESS);
        } catch (RuntimeException e) {
            if (arena != null) {
                arena.close();
            } else {
                HugePages.unmap(memory);
            }
            throw e;
        }
        Region r = new Region(memory, mr, huge, arena);
        regions.add(r);
        return r;
    }

    /** The registered region holding {@code [address, address + length)}, or null. */
    Region regionContaining(long address, long length) {
        for (int i = 0; i < regions.size(); i++) {
            Region r = regions.get(i);
            if (r.contains(address, length)) {
                return r;
            }
        }
        return null;
    }

    /** Why huge pages were not used, null if they were (or were not asked for). */
    String hugePageFailure() {
        return hugePageFailure;
    }

    long registeredBytes() {
        long sum = 0;
        for (Region r : regions) {
            sum += r.memory.byteSize();
        }
        return sum;
    }

    int regionCount() {
        return regions.size();
    }

    /** Deregisters and frees everything; only once no QP can touch the memory any more. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException failure = null;
        for (Region r : regions) {
            try {
                r.free();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        regions.clear();
        if (failure != null) {
            throw failure;
        }
    }
}
