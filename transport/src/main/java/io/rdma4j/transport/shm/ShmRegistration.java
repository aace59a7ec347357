package io.rdma4j.transport.shm;

import io.rdma4j.transport.RegisteredBuffer;

import java.lang.foreign.MemorySegment;

/**
 * A registration with one {@link ShmTransport}: either a buffer carved from this rank's shared
 * files ({@link ShmBuffer}) or caller memory passed to {@code register} ({@link CachedRegistration}).
 * A receive into memory that lies in a live region of the shared files is copied there directly by
 * the sender (one copy); any other receive goes through the bounce buffer (two copies).
 */
abstract sealed class ShmRegistration implements RegisteredBuffer permits ShmBuffer, CachedRegistration {
    final ShmTransport transport;
    final MemorySegment segment;

    ShmRegistration(ShmTransport transport, MemorySegment segment) {
        this.transport = transport;
        this.segment = segment;
    }

    @Override
    public final MemorySegment segment() {
        return segment;
    }

    /** Region key of the shared region holding these bytes, 0 when they are private memory. */
    abstract long regionKey();

    /** Offset of {@link #segment()} in its slab; meaningful only when {@link #regionKey()} != 0. */
    abstract long slabAddress();

    /** Why this registration may not be used any more, or null while it may. */
    abstract String unusableReason();
}
