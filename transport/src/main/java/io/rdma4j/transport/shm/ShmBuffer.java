package io.rdma4j.transport.shm;

import io.rdma4j.transport.RemoteBuffer;

import java.lang.foreign.MemorySegment;

/**
 * A remotely accessible buffer carved from one of this rank's slab files. Its descriptor names
 * the slab file, the offset in it and the region key that peers resolve through the
 * {@link RegionTable} before every access. Closing frees the region: its key stops resolving,
 * so a peer's later write with the old descriptor is refused, not applied.
 */
final class ShmBuffer extends ShmRegistration {
    final int slab;
    final long address;
    final long reserved;
    final int regionIndex;
    final long key;
    private final RemoteBuffer remote;
    private boolean closed;
    /** Whether its descriptor went out to the caller ({@link #remote()}), who may hand it to peers. */
    private volatile boolean exposed;

    ShmBuffer(ShmTransport transport, MemorySegment segment, int slab, String slabName, long address, long reserved,
              int regionIndex, long key) {
        super(transport, segment);
        this.slab = slab;
        this.address = address;
        this.reserved = reserved;
        this.regionIndex = regionIndex;
        this.key = key;
        this.remote = new RemoteBuffer(transport.rank(), address, segment.byteSize(), key, slabName);
    }

    @Override
    public boolean remotelyAccessible() {
        return true;
    }

    @Override
    public RemoteBuffer remote() {
        expose();
        return remote;
    }

    /** The descriptor, for this package's own use: not handed out, so not {@link #exposed()}. */
    RemoteBuffer descriptor() {
        return remote;
    }

    void expose() {
        if (!exposed) { // a volatile store is a fence: only the first call pays it
            exposed = true;
        }
    }

    /**
     * Whether peers may hold this buffer's descriptor: they can write or read it with a one-sided
     * operation at any time, so freeing it cannot know that no copy into it is still running.
     */
    boolean exposed() {
        return exposed;
    }

    @Override
    long regionKey() {
        return key;
    }

    @Override
    long slabAddress() {
        return address;
    }

    @Override
    String unusableReason() {
        return closed ? "shm buffer " + remote + " was closed" : null;
    }

    boolean isClosed() {
        return closed;
    }

    /** Contains {@code s} entirely (same memory, not just an equal address range of another mapping)? */
    boolean contains(MemorySegment s) {
        long start = segment.address();
        return !closed && s.address() >= start && s.address() - start <= segment.byteSize()
                && s.byteSize() <= segment.byteSize() - (s.address() - start);
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            transport.free(this);
        }
    }

    @Override
    public String toString() {
        return "ShmBuffer" + remote;
    }
}
