package io.rdma4j.transport.tcp;

import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.internal.TransportState;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * A TCP registration: plain off-heap memory plus reusable ByteBuffer views of it, because socket
 * I/O needs ByteBuffers and {@code MemorySegment.asByteBuffer()} allocates. One view per 1 GiB
 * chunk (a ByteBuffer is int-indexed); views are repositioned for each I/O call, which is safe
 * because all I/O of a transport runs under its lock.
 */
final class TcpBuffer implements RegisteredBuffer {
    static final int CHUNK_SHIFT = 30;

    final TcpTransport owner;
    private final MemorySegment segment;
    private final Arena arena;
    private final boolean remote;
    private final boolean cached;
    private final ByteBuffer[] views;
    long key = -1;
    private RemoteBuffer descriptor;
    boolean closed;

    TcpBuffer(TcpTransport owner, MemorySegment segment, Arena arena, boolean remote, boolean cached) {
        this.owner = owner;
        this.segment = segment;
        this.arena = arena;
        this.remote = remote;
        this.cached = cached;
        long size = segment.byteSize();
        int chunks = (int) ((size + (1L << CHUNK_SHIFT) - 1) >>> CHUNK_SHIFT);
        views = new ByteBuffer[chunks];
        for (int i = 0; i < chunks; i++) {
            long base = (long) i << CHUNK_SHIFT;
            views[i] = segment.asSlice(base, Math.min(1L << CHUNK_SHIFT, size - base)).asByteBuffer();
        }
    }

    void publish(int rank, long key) {
        this.key = key;
        this.descriptor = new RemoteBuffer(rank, segment.address(), segment.byteSize(), key, "");
    }

    /** The view holding {@code offset}, positioned there and limited to at most {@code remaining} bytes. */
    ByteBuffer view(long offset, long remaining) {
        int chunk = (int) (offset >>> CHUNK_SHIFT);
        ByteBuffer v = views[chunk];
        int pos = (int) (offset - ((long) chunk << CHUNK_SHIFT));
        v.limit((int) Math.min(v.capacity(), pos + remaining));
        v.position(pos);
        return v;
    }

    boolean cached() {
        return cached;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    /**
     * Whether this registration is {@code other} or its memory shares a byte with {@code other}'s
     * (a view and the buffer it is in, say).
     */
    boolean overlaps(TcpBuffer other) {
        return this == other || TransportState.sharesBytes(segment, other.segment); // an empty one is itself
    }

    @Override
    public boolean remotelyAccessible() {
        return remote;
    }

    @Override
    public RemoteBuffer remote() {
        if (!remote) {
            throw new UnsupportedOperationException("this TCP registration is local only; use Transport.allocate for memory peers may access");
        }
        return descriptor;
    }

    @Override
    public void close() {
        if (!cached) {
            owner.release(this);
        }
    }

    /** Frees owned memory; called by the transport under its lock. */
    void free() {
        closed = true;
        if (arena != null) {
            arena.close();
        }
    }

    @Override
    public String toString() {
        return "TcpBuffer[" + segment.byteSize() + " bytes" + (remote ? ", key 0x" + Long.toHexString(key) : "") + "]";
    }
}
