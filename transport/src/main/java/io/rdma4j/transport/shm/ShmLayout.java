package io.rdma4j.transport.shm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * Byte layout of one rank's control file. The owner writes its parameters into the header, so a
 * peer rebuilds the same offsets from the file itself and never relies on its own configuration
 * matching the owner's.
 *
 * <pre>
 * [0, 4096)            header: magic, version, rank, size, ring capacities, bounce geometry, pid,
 *                      request table size, state, shared window size
 * [4096, ...)          shared window: written by the owner only, read in place by every peer
 *                      ({@link io.rdma4j.transport.SharedWindow}); page-aligned, may be empty
 * [...)                region table: one {@link RegionTable} entry per remotely accessible buffer
 * areas[size]          one inbound area per peer rank p (the owner's own index is unused):
 *                        chunk counter | dropped word (both owner writes)
 *                        | CTS ring (owner produces) | event ring (p produces)
 *                        | immediate ring (p produces) | bounce chunks (p writes, owner reads)
 * </pre>
 *
 * Everything that carries data from p to the owner lives in the owner's file, so a sender that
 * exits right after completing a send loses nothing the receiver has yet to read.
 */
final class ShmLayout {
    static final long MAGIC = 0x72646D61346A5348L; // "rdma4jSH"
    static final int VERSION = 6;
    static final long PAGE = 4096;
    static final int CACHE_LINE = 64;

    static final int CTS_ENTRY = 64;
    /** One cache line: an event's header and, in an eager one, the message ({@code ShmConnection.EAGER_BYTES}). */
    static final int EVENT_ENTRY = 64;
    static final int IMM_ENTRY = 8;
    static final int REGION_ENTRY = 32;
    /** Bound on a header's window size, so a corrupt header cannot ask for a huge mapping. */
    static final long MAX_WINDOW_BYTES = 64L << 20;

    /** Header states: written by the owner with release semantics, polled by peers. */
    static final long STATE_READY = 1;
    static final long STATE_CLOSED = 2;
    static final long STATE_ABORTED = 3;

    private static final long H_MAGIC = 0;
    private static final long H_VERSION = 8;
    private static final long H_RANK = 12;
    private static final long H_SIZE = 16;
    private static final long H_CTS_CAP = 20;
    private static final long H_EVENT_CAP = 24;
    private static final long H_IMM_CAP = 28;
    private static final long H_CHUNK_COUNT = 32;
    private static final long H_REGION_CAP = 36;
    private static final long H_CHUNK_SIZE = 40;
    private static final long H_PID = 48;
    private static final long H_REQUESTS = 56;
    /** 1 when the owner holds its {@link ControlLock} for its life, 0 when it could not take it. */
    private static final long H_OWNER_LOCKED = 60;
    /** The bytes of the header that {@link #ownerLocked} reads. */
    static final int LOCK_HEADER_BYTES = 64;
    private static final long H_STATE = 64; // own cache line: peers poll it
    private static final long H_WINDOW = 128;

    /** Inside an area: the count of bounce chunks the owner has copied out (owner writes). */
    static final long AREA_CHUNKS_FREED = 0;
    /**
     * Inside an area, a cache line of its own: nonzero once the owner failed its connection to
     * the area's peer for a reason of its own side (owner writes; the peer polls it), so that the
     * peer's requests fail now instead of waiting out their timeout for a side that gave up.
     */
    static final long AREA_DROPPED = CACHE_LINE;

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    final int rank;
    final int size;
    final int ctsCapacity;
    final int eventCapacity;
    final int immCapacity;
    final int chunkCount;
    final long chunkSize;
    final int regionCapacity;
    /** The owner's request table size: bounds how many CTS entries a peer may have to hold. */
    final int requestCapacity;
    /** Bytes of the owner's shared window (a multiple of {@link #PAGE}, possibly 0). */
    final long windowBytes;

    final long windowOffset;
    final long regionTableOffset;
    final long areasOffset;
    final long areaStride;
    final long ctsRingOffset;    // relative to an area
    final long eventRingOffset;  // relative to an area
    final long immRingOffset;    // relative to an area
    final long bounceOffset;     // relative to an area
    final long fileSize;

    /** The largest bounce chunk a header may describe (so that a chunk count times it cannot overflow). */
    static final long MAX_CHUNK_BYTES = 1L << 30;

    ShmLayout(int rank, int size, int ctsCapacity, int eventCapacity, int immCapacity,
              int chunkCount, long chunkSize, int regionCapacity, int requestCapacity, long windowBytes) {
        requirePowerOfTwo("CTS ring capacity", ctsCapacity);
        requirePowerOfTwo("event ring capacity", eventCapacity);
        requirePowerOfTwo("immediate ring capacity", immCapacity);
        if (size < 1 || rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " outside group of size " + size);
        }
        if (chunkCount < 1 || chunkSize < CACHE_LINE || chunkSize % CACHE_LINE != 0 || chunkSize > MAX_CHUNK_BYTES) {
            throw new IllegalArgumentException("bad bounce geometry: " + chunkCount + " chunks of " + chunkSize + " bytes");
        }
        if (regionCapacity < 1 || regionCapacity > RegionTable.MAX_CAPACITY) {
            throw new IllegalArgumentException("region capacity " + regionCapacity + " outside [1, " + RegionTable.MAX_CAPACITY + "]");
        }
        this.rank = rank;
        this.size = size;
        this.ctsCapacity = ctsCapacity;
        this.eventCapacity = eventCapacity;
        this.immCapacity = immCapacity;
        this.chunkCount = chunkCount;
        this.chunkSize = chunkSize;
        this.regionCapacity = regionCapacity;
        if (requestCapacity < 1 || requestCapacity > RequestTable.MAX_CAPACITY) {
            throw new IllegalArgumentException("request capacity " + requestCapacity + " outside [1, " + RequestTable.MAX_CAPACITY + "]");
        }
        this.requestCapacity = requestCapacity;
        if (windowBytes < 0 || windowBytes % PAGE != 0 || windowBytes > MAX_WINDOW_BYTES) {
            throw new IllegalArgumentException("shared window of " + windowBytes + " bytes: must be a multiple of "
                    + PAGE + " in [0, " + MAX_WINDOW_BYTES + "]");
        }
        this.windowBytes = windowBytes;

        windowOffset = PAGE;
        regionTableOffset = windowOffset + windowBytes;
        areasOffset = regionTableOffset + align((long) regionCapacity * REGION_ENTRY, PAGE);
        ctsRingOffset = 2L * CACHE_LINE;
        eventRingOffset = ctsRingOffset + SpscRing.bytes(ctsCapacity, CTS_ENTRY);
        immRingOffset = eventRingOffset + SpscRing.bytes(eventCapacity, EVENT_ENTRY);
        bounceOffset = align(immRingOffset + SpscRing.bytes(immCapacity, IMM_ENTRY), PAGE);
        areaStride = align(bounceOffset + chunkCount * chunkSize, PAGE);
        try {
            // a peer's header is read into this constructor too: its numbers may be anything
            fileSize = Math.addExact(areasOffset, Math.multiplyExact(size, areaStride));
        } catch (ArithmeticException overflow) {
            throw new IllegalArgumentException("a control file of " + size + " areas of " + areaStride
                    + " bytes is larger than a file can be");
        }
    }

    /** Offset of the area that carries traffic from {@code peer} to the owner of this file. */
    long area(int peer) {
        return areasOffset + peer * areaStride;
    }

    /** Writes the parameters and pid; the magic goes last so a peer never sees a half-written header. */
    void writeHeader(MemorySegment file, long pid, boolean ownerLocked) {
        file.set(ValueLayout.JAVA_INT, H_VERSION, VERSION);
        file.set(ValueLayout.JAVA_INT, H_OWNER_LOCKED, ownerLocked ? 1 : 0);
        file.set(ValueLayout.JAVA_INT, H_RANK, rank);
        file.set(ValueLayout.JAVA_INT, H_SIZE, size);
        file.set(ValueLayout.JAVA_INT, H_CTS_CAP, ctsCapacity);
        file.set(ValueLayout.JAVA_INT, H_EVENT_CAP, eventCapacity);
        file.set(ValueLayout.JAVA_INT, H_IMM_CAP, immCapacity);
        file.set(ValueLayout.JAVA_INT, H_CHUNK_COUNT, chunkCount);
        file.set(ValueLayout.JAVA_INT, H_REGION_CAP, regionCapacity);
        file.set(ValueLayout.JAVA_INT, H_REQUESTS, requestCapacity);
        file.set(ValueLayout.JAVA_LONG, H_CHUNK_SIZE, chunkSize);
        file.set(ValueLayout.JAVA_LONG, H_PID, pid);
        file.set(ValueLayout.JAVA_LONG, H_WINDOW, windowBytes);
        LONG.setRelease(file, H_STATE, STATE_READY);
        LONG.setRelease(file, H_MAGIC, MAGIC);
    }

    /**
     * Rebuilds the layout of a peer's control file from its header and checks that it describes
     * the expected rank of a group of the expected size and fits the mapped file.
     */
    static ShmLayout readHeader(MemorySegment file, int expectedRank, int expectedSize, String what) {
        if (file.byteSize() < PAGE || (long) LONG.getAcquire(file, H_MAGIC) != MAGIC) {
            throw new IllegalStateException(what + " is not an initialised rdma4j shm control file");
        }
        int version = file.get(ValueLayout.JAVA_INT, H_VERSION);
        if (version != VERSION) {
            throw new IllegalStateException(what + " has layout version " + version + ", this build reads " + VERSION);
        }
        ShmLayout layout = new ShmLayout(file.get(ValueLayout.JAVA_INT, H_RANK), file.get(ValueLayout.JAVA_INT, H_SIZE),
                file.get(ValueLayout.JAVA_INT, H_CTS_CAP), file.get(ValueLayout.JAVA_INT, H_EVENT_CAP),
                file.get(ValueLayout.JAVA_INT, H_IMM_CAP), file.get(ValueLayout.JAVA_INT, H_CHUNK_COUNT),
                file.get(ValueLayout.JAVA_LONG, H_CHUNK_SIZE), file.get(ValueLayout.JAVA_INT, H_REGION_CAP),
                file.get(ValueLayout.JAVA_INT, H_REQUESTS), file.get(ValueLayout.JAVA_LONG, H_WINDOW));
        if (layout.rank != expectedRank || layout.size != expectedSize) {
            throw new IllegalStateException(what + " belongs to rank " + layout.rank + " of " + layout.size
                    + ", expected rank " + expectedRank + " of " + expectedSize);
        }
        if (layout.fileSize > file.byteSize()) {
            throw new IllegalStateException(what + " is " + file.byteSize() + " bytes, its header needs " + layout.fileSize);
        }
        return layout;
    }

    /**
     * Whether the first {@link #LOCK_HEADER_BYTES} of a control file, read from the file, are a
     * complete header of this version whose owner holds its {@link ControlLock}: only then does a
     * free lock mean that the owner died (a header of an older build, or one still being written,
     * says nothing).
     */
    static boolean ownerLocked(MemorySegment header) {
        return header.byteSize() >= LOCK_HEADER_BYTES && header.get(ValueLayout.JAVA_LONG, H_MAGIC) == MAGIC
                && header.get(ValueLayout.JAVA_INT, H_VERSION) == VERSION
                && header.get(ValueLayout.JAVA_INT, H_OWNER_LOCKED) == 1;
    }

    static long pid(MemorySegment file) {
        return file.get(ValueLayout.JAVA_LONG, H_PID);
    }

    static long state(MemorySegment file) {
        return (long) LONG.getAcquire(file, H_STATE);
    }

    static void setState(MemorySegment file, long state) {
        LONG.setRelease(file, H_STATE, state);
    }

    static long align(long value, long alignment) {
        return (value + alignment - 1) & -alignment;
    }

    private static void requirePowerOfTwo(String what, int value) {
        if (value < 2 || Integer.bitCount(value) != 1) {
            throw new IllegalArgumentException(what + " must be a power of two >= 2, got " + value);
        }
    }
}
