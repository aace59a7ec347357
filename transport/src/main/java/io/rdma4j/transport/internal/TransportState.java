package io.rdma4j.transport.internal;

import java.lang.foreign.MemorySegment;

import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.TransportException;

/**
 * Whether a socket or verbs transport was aborted or closed, and the argument checks every
 * operation of such a transport makes first; one place, so that every provider reports a closed
 * transport, a failed connection or a bad range in the same words. Not thread-safe: the
 * transport's lock guards it.
 */
public final class TransportState {
    private final String provider;
    private final int rank;
    private TransportException aborted;
    private boolean closed;

    public TransportState(String provider, int rank, int size) {
        if (size < 1 || rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " outside a group of size " + size);
        }
        this.provider = provider;
        this.rank = rank;
    }

    /** Throws if the transport was aborted (naming the cause's peer) or closed. */
    public void checkOpen() {
        if (aborted != null) {
            throw new TransportException(aborted.peer(), "transport of rank " + rank + " was aborted: " + aborted.getMessage(), aborted);
        }
        if (closed) {
            throw new IllegalStateException(provider + " transport of rank " + rank + " is closed");
        }
    }

    /** Records the first abort; its exception, or null if the transport was aborted or closed before. */
    public TransportException abort(Throwable cause) {
        if (aborted != null || closed) {
            return null;
        }
        aborted = cause instanceof TransportException te ? te : new TransportException(-1, "aborted: " + cause, cause);
        return aborted;
    }

    /** Whether the transport was aborted (a fault, not a close). */
    public boolean aborted() {
        return aborted != null;
    }

    public boolean closed() {
        return closed;
    }

    public void markClosed() {
        closed = true;
    }

    /** What a connection to {@code peer} fails with when the whole transport stops for {@code cause}. */
    public TransportException stopped(int peer, TransportException cause) {
        return new TransportException(peer, "transport of rank " + rank + " stopped: " + cause.getMessage(), cause);
    }

    /** Throws if the connection to {@code peer} failed before (its {@code failure} is not null). */
    public void checkConnection(int peer, TransportException failure) {
        checkOpen();
        if (failure != null) {
            throw new TransportException(peer, "connection to peer " + peer + " failed earlier: " + failure.getMessage(), failure);
        }
    }

    /**
     * What the connection to {@code peer} fails with when {@code cause} is a fault of this side's
     * own memory (a buffer's arena closed, or confined to another thread, under a transfer), or
     * null when it is not one: such a fault is no peer's, so no rank is to be blamed for it.
     */
    public TransportException localMemoryFault(int peer, Throwable cause) {
        if (!(cause instanceof IllegalStateException || cause instanceof WrongThreadException)) {
            return null;
        }
        return new TransportException(peer, "rank " + rank + " could not go on with its connection to peer " + peer
                + ": the memory of one of its buffers became inaccessible (" + cause + ")", cause);
    }

    /** The peer asked for is another rank of the group. */
    public void checkPeer(int peer, int size) {
        checkOpen();
        if (peer < 0 || peer >= size || peer == rank) {
            throw new IllegalArgumentException("rank " + rank + " cannot connect to peer " + peer + " (group size " + size + ")");
        }
    }

    /** {@code [offset, +length)} lies within a local buffer of {@code size} bytes. */
    public static void checkRange(long offset, long length, long size, String what) {
        if (offset < 0 || length < 0 || offset > size || length > size - offset) {
            throw new IllegalArgumentException(what + " range [" + offset + ", +" + length + ") outside its buffer of "
                    + size + " bytes");
        }
    }

    /**
     * A local buffer a receive or read may write into: not a read-only view (which a copy into it
     * would fail on, inside progress, and which a NIC would write into regardless).
     */
    public static void checkWritable(MemorySegment segment, String what) {
        if (segment.isReadOnly()) {
            throw new IllegalArgumentException(what + " buffer is read-only");
        }
    }

    /**
     * A local buffer whose memory is still there: a segment of a closed arena would fail a copy
     * inside progress, and a NIC would still reach the freed memory through its registration.
     */
    public static void checkAlive(MemorySegment segment, String what, Object buffer) {
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException(what + " buffer's memory was freed (its arena is closed): " + buffer);
        }
    }

    /** Whether the two segments' address ranges share a byte. */
    public static boolean sharesBytes(MemorySegment a, MemorySegment b) {
        return a.address() < b.address() + b.byteSize() && b.address() < a.address() + a.byteSize();
    }

    /** A remote buffer of {@code peer} that holds {@code [offset, +length)}. */
    public static void checkRemote(int peer, RemoteBuffer r, long offset, long length, String what) {
        if (r.owner() != peer) {
            throw new IllegalArgumentException(what + " belongs to rank " + r.owner() + ", not to peer " + peer);
        }
        if (!r.contains(offset, length)) {
            throw new IllegalArgumentException(what + " range [" + offset + ", +" + length + ") outside the remote buffer of "
                    + r.length() + " bytes");
        }
    }

    /** An immediate is either none or an unsigned 32-bit value. */
    public static void checkImmediate(long immediate, long none) {
        if (immediate != none && (immediate < 0 || immediate > 0xFFFF_FFFFL)) {
            throw new IllegalArgumentException("immediate " + immediate + " is not an unsigned 32-bit value");
        }
    }
}
