package io.rdma4j.transport.shm;

import io.rdma4j.nativesupport.internal.LibC;
import io.rdma4j.transport.TransportException;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * This rank's remotely accessible memory: slab files in the shm directory, carved into buffers
 * that are published in the {@link RegionTable}. Slabs are sparse files of {@link #SLAB_BYTES}
 * (or one dedicated slab for a larger buffer); they stay mapped until the transport closes, so a
 * peer that still holds an old descriptor can never fault on an unmapped page of ours. A freed
 * buffer's whole pages go back to the file system (holes in the slab file), so memory that a job
 * frees is free in /dev/shm again, not held until the transport closes (unless peers may still
 * copy into it: {@link ShmTransport#free}).
 */
final class ShmHeap implements AutoCloseable {
    static final long SLAB_BYTES = 64L << 20;
    private static final long LARGE_ALIGNMENT = 2L << 20;
    /** Larger than any file system holds, and small enough that aligning it cannot overflow. */
    static final long MAX_BYTES = 1L << 50;

    private final ShmTransport transport;
    private final ShmFiles files;
    private final RegionTable table;
    private final List<MappedFile> slabs = new ArrayList<>();
    private final List<SlabAllocator> allocators = new ArrayList<>();
    private final ShmBuffer[] live;
    private final int[] generation;
    private final int[] freeIndices;
    private int freeCount;

    ShmHeap(ShmTransport transport, ShmFiles files, RegionTable table) {
        this.transport = transport;
        this.files = files;
        this.table = table;
        int n = table.capacity();
        live = new ShmBuffer[n];
        generation = new int[n];
        freeIndices = new int[n];
        for (int i = n - 1; i >= 0; i--) {
            freeIndices[freeCount++] = i;
        }
    }

    ShmBuffer allocate(long bytes) {
        if (bytes < 0 || bytes > MAX_BYTES) {
            throw new IllegalArgumentException("cannot allocate " + bytes + " bytes (0.." + MAX_BYTES + ")");
        }
        if (freeCount == 0) {
            throw new TransportException(-1, "shm: all " + live.length + " regions of rank " + transport.rank()
                    + " are in use; close buffers that are no longer needed");
        }
        long reserved = ShmLayout.align(Math.max(bytes, 1), ShmLayout.CACHE_LINE);
        long alignment = bytes >= ShmLayout.PAGE ? ShmLayout.PAGE : ShmLayout.CACHE_LINE;
        int slab = -1;
        long address = -1;
        for (int s = 0; s < allocators.size() && address < 0; s++) {
            address = allocators.get(s).allocate(reserved, alignment);
            slab = s;
        }
        if (address < 0) {
            slab = newSlab(reserved);
            address = allocators.get(slab).allocate(reserved, alignment);
        }
        MemorySegment memory = slabs.get(slab).segment().asSlice(address, bytes);
        try {
            String slabName = files.slabName(slab);
            MappedFile.backWithMemory(memory, files.dir(), transport.rank(),
                    () -> "a buffer of " + bytes + " bytes in " + slabName);
        } catch (TransportException e) {
            allocators.get(slab).free(address, reserved);
            throw e;
        }
        int index = freeIndices[--freeCount];
        generation[index] = generation[index] == Integer.MAX_VALUE ? 1 : generation[index] + 1;
        long key = RegionTable.key(index, generation[index]);
        ShmBuffer buffer = new ShmBuffer(transport, memory, slab, files.slabName(slab), address, reserved, index, key);
        live[index] = buffer;
        table.publish(index, key, slab, address, bytes);
        return buffer;
    }

    /** Frees the buffer's region; {@code giveBack}: its whole pages go back to the file system too. */
    void free(ShmBuffer buffer, boolean giveBack) {
        if (live[buffer.regionIndex] != buffer) {
            return;
        }
        // Unpublish first: from here on no peer resolves the key, then the bytes may be reused.
        table.clear(buffer.regionIndex);
        live[buffer.regionIndex] = null;
        freeIndices[freeCount++] = buffer.regionIndex;
        Map.Entry<Long, Long> run = allocators.get(buffer.slab).free(buffer.address, buffer.reserved);
        if (!giveBack) {
            return;
        }
        // The pages the free run now covers whole, around the buffer: a page shared with a live
        // neighbour keeps its memory.
        long page = LibC.pageSize();
        long from = Math.max(run.getKey(), buffer.address & -page);
        long to = Math.min(run.getKey() + run.getValue(), ShmLayout.align(buffer.address + buffer.reserved, page));
        if (to > from) {
            MappedFile.giveBackMemory(slabs.get(buffer.slab).segment().asSlice(from, to - from));
        }
    }

    /** The live buffer whose memory contains {@code segment}, or null. */
    ShmBuffer containing(java.lang.foreign.MemorySegment segment) {
        for (ShmBuffer b : live) {
            if (b != null && b.contains(segment)) {
                return b;
            }
        }
        return null;
    }

    /** Closes every live buffer (their keys stop resolving); the slabs are unmapped by {@link #close()}. */
    void freeAll() {
        for (ShmBuffer b : live) {
            if (b != null) {
                b.close();
            }
        }
    }

    private int newSlab(long reserved) {
        long size = reserved <= SLAB_BYTES ? SLAB_BYTES : ShmLayout.align(reserved, LARGE_ALIGNMENT);
        try {
            long usable = Files.getFileStore(files.dir()).getUsableSpace();
            // A slab is sparse; refuse only when the buffer itself cannot fit, because touching a
            // page of a full tmpfs raises SIGBUS rather than an exception.
            if (usable < reserved) {
                throw new TransportException(-1, "shm: " + files.dir() + " has " + usable + " bytes free, rank "
                        + transport.rank() + " needs " + reserved + " for a buffer (raise the tmpfs size or set "
                        + "RDMA4J_SHM_DIR)");
            }
        } catch (IOException e) {
            throw new TransportException(-1, "shm: cannot read free space of " + files.dir() + ": " + e, e);
        }
        int slab = slabs.size();
        if (slab >= RegionTable.MAX_SLABS) {
            throw new TransportException(-1, "shm: rank " + transport.rank() + " has " + slab + " slab files, the limit");
        }
        slabs.add(MappedFile.create(files.slab(slab), size));
        allocators.add(new SlabAllocator(size));
        return slab;
    }

    @Override
    public void close() {
        for (MappedFile m : slabs) {
            m.close();
        }
    }
}
