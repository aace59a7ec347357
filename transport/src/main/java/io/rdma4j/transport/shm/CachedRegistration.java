package io.rdma4j.transport.shm;

import io.rdma4j.transport.RemoteBuffer;

import java.lang.foreign.MemorySegment;

/**
 * A caller segment registered with {@code register()}. Nothing is pinned or copied: the shared
 * memory provider can read and write any segment of this process. When the segment lies inside
 * a live {@link ShmBuffer} (e.g. a slice of an allocated buffer) it is a view of that region and
 * remotely accessible; otherwise it is private memory, used only as a local source or target.
 * Cached by the transport, so {@link #close()} does nothing.
 */
final class CachedRegistration extends ShmRegistration {
    private final ShmBuffer region;
    private final RemoteBuffer remote;

    CachedRegistration(ShmTransport transport, MemorySegment segment, ShmBuffer region) {
        super(transport, segment);
        this.region = region;
        this.remote = region == null ? null : new RemoteBuffer(transport.rank(), slabAddressIn(region, segment),
                segment.byteSize(), region.key, region.descriptor().name());
    }

    private static long slabAddressIn(ShmBuffer region, MemorySegment s) {
        return region.address + (s.address() - region.segment.address());
    }

    @Override
    public boolean remotelyAccessible() {
        return region != null;
    }

    @Override
    public RemoteBuffer remote() {
        if (remote == null) {
            throw new UnsupportedOperationException("segment at 0x" + Long.toHexString(segment.address())
                    + " is private memory; peers can only target buffers from ShmTransport.allocate()");
        }
        region.expose();
        return remote;
    }

    @Override
    long regionKey() {
        return region == null ? 0 : region.key;
    }

    @Override
    long slabAddress() {
        return remote == null ? 0 : remote.address();
    }

    @Override
    String unusableReason() {
        if (!segment.scope().isAlive()) {
            return "registered segment at 0x" + Long.toHexString(segment.address()) + " was freed (its arena is closed)";
        }
        if (region != null && region.isClosed()) {
            return "registered segment lies in closed shm buffer " + region.descriptor();
        }
        return null;
    }

    /** Whether this cache entry stands for {@code s}: the same memory of the same, still open, arena. */
    boolean matches(MemorySegment s) {
        return segment.address() == s.address() && segment.byteSize() == s.byteSize()
                && segment.scope().equals(s.scope()) && segment.scope().isAlive()
                && (region == null || !region.isClosed());
    }

    @Override
    public void close() {
        // Cached until the transport closes (see Transport.register).
    }
}
