package io.rdma4j.transport.shm;

import io.rdma4j.transport.SharedWindow;
import io.rdma4j.transport.TransportException;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * The {@link SharedWindow} of an {@link ShmTransport}: a page-aligned range of each rank's control
 * file (see {@code ShmLayout}), so it needs no file, mapping or cleanup of its own; a peer's window
 * is a view of the control-file mapping its connection already holds.
 */
final class ShmWindow implements SharedWindow {
    private final ShmTransport transport;
    private final MemorySegment local;
    private final MemorySegment[] peers;

    ShmWindow(ShmTransport transport, MemorySegment local, int size) {
        this.transport = transport;
        this.local = local;
        this.peers = new MemorySegment[size];
    }

    @Override
    public long byteSize() {
        return local.byteSize();
    }

    @Override
    public MemorySegment local() {
        return local;
    }

    @Override
    public MemorySegment peer(int peer) {
        MemorySegment w = peers[peer];
        if (w == null) {
            ShmConnection c = (ShmConnection) transport.connection(peer);
            ShmLayout theirs = c.remote().layout;
            if (theirs.windowBytes != local.byteSize()) {
                throw new TransportException(peer, "shm: peer " + peer + " has a shared window of " + theirs.windowBytes
                        + " bytes, this rank " + local.byteSize() + " (different rdma4j builds?)");
            }
            w = c.remote().control().asSlice(theirs.windowOffset, theirs.windowBytes);
            peers[peer] = w;
        }
        return w;
    }

    @Override
    public void checkPeer(int peer) {
        ((ShmConnection) transport.connection(peer)).checkHealthy();
    }

    @Override
    public boolean sleepWhile(int peer, long offset, int value, long nanos) {
        if (!Futex.available()) {
            return false;
        }
        Futex.await(peer(peer).address() + checkWord(offset), value, nanos);
        return true;
    }

    @Override
    public void wake(long offset) {
        if (Futex.available()) {
            Futex.wakeAll(local.address() + checkWord(offset));
        }
    }

    /** A futex word must be an aligned int of the window: any other address is another part of the mapping, or none. */
    private long checkWord(long offset) {
        Objects.checkFromIndexSize(offset, Integer.BYTES, local.byteSize());
        if ((offset & (Integer.BYTES - 1)) != 0) {
            throw new IllegalArgumentException("window offset " + offset + " of a futex word is not 4-byte aligned");
        }
        return offset;
    }
}
