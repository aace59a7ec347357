package io.rdma4j.transport.verbs;

import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.internal.TransportState;

import io.rdma4j.verbs.MemoryRegion;

import java.lang.foreign.MemorySegment;

/**
 * Memory registered with a verbs transport: a block of its buffer pool ({@code allocate}) or a
 * cached registration of caller memory ({@code register}), with the keys work requests use.
 */
final class VerbsBuffer implements RegisteredBuffer {
    final VerbsTransport owner;
    private final MemorySegment segment;
    /** {@link #segment} without its scope, for {@link #forCopy()}. */
    private final MemorySegment unscoped;
    final int lkey;
    final int rkey;
    /** The pool block this buffer is, null for a registration of caller memory. */
    final BufferPool.Block block;
    /** The memory region registered for this buffer alone (caller memory outside the pool), else null. */
    final MemoryRegion ownRegion;
    private final RemoteBuffer descriptor;
    boolean closed;
    /** Set by {@link #remote()}, from any thread; read under the transport's lock. */
    private volatile boolean handedOut;
    /** The owner's registration clock when this was last handed out by register (LRU eviction). */
    long lastUse;

    VerbsBuffer(VerbsTransport owner, MemorySegment segment, int lkey, int rkey, BufferPool.Block block,
                MemoryRegion ownRegion) {
        this.owner = owner;
        this.ownRegion = ownRegion;
        this.segment = segment;
        this.unscoped = unscoped(segment);
        this.lkey = lkey;
        this.rkey = rkey;
        this.block = block;
        this.descriptor = new RemoteBuffer(owner.rank(), segment.address(), segment.byteSize(),
                Integer.toUnsignedLong(rkey), "");
    }

    long address() {
        return segment.address();
    }

    /**
     * Whether this registration is {@code other} or its memory shares a byte with {@code other}'s
     * (a view and the pool block it is in, say).
     */
    boolean overlaps(VerbsBuffer other) {
        return this == other || TransportState.sharesBytes(segment, other.segment); // an empty one is itself
    }

    @SuppressWarnings("restricted") // the same memory, valid while the registration is (as for the NIC)
    private static MemorySegment unscoped(MemorySegment segment) {
        return MemorySegment.ofAddress(segment.address()).reinterpret(segment.byteSize());
    }

    /**
     * The memory for the provider's own copies of eager messages, which whichever thread drives
     * progress makes (the progress thread, another thread's await): the caller's segment where
     * this thread may access it; where it may not (memory of a confined arena) but is alive, the
     * same memory without its scope, as the NIC writes it from no thread at all. A closed arena's
     * segment stays, to fail the copy.
     */
    MemorySegment forCopy() {
        return segment.isAccessibleBy(Thread.currentThread()) || !segment.scope().isAlive() ? segment : unscoped;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    /** Every verbs registration grants remote read and write. */
    @Override
    public boolean remotelyAccessible() {
        return true;
    }

    @Override
    public RemoteBuffer remote() {
        handedOut = true;
        return descriptor;
    }

    /** Whether {@link #remote()} was asked for: a peer may write or read it at any time from then on. */
    boolean handedOut() {
        return handedOut;
    }

    /**
     * Returns a pool block to the pool, or releases a registration of caller memory (which
     * otherwise stays cached until its memory is freed or the transport closes).
     */
    @Override
    public void close() {
        if (block != null) {
            owner.release(this);
        } else if (ownRegion != null) {
            owner.deregister(this);
        }
    }

    @Override
    public String toString() {
        return "VerbsBuffer[" + segment.byteSize() + " bytes at 0x" + Long.toHexString(segment.address())
                + ", rkey 0x" + Integer.toHexString(rkey) + (block == null ? ", registered" : ", pooled") + "]";
    }
}
