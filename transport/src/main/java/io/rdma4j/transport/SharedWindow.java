package io.rdma4j.transport;

import java.lang.foreign.MemorySegment;

/**
 * Optional capability of a provider whose ranks share memory (the shm provider): one small window
 * per rank, written only by its owner and read in place, with plain loads, by every peer. It lets
 * latency-bound collectives skip the request machinery entirely (no clear-to-send, no events):
 * each rank writes its contribution into its own window and reads the others' where they lie.
 *
 * <p><b>Ordering.</b> A window starts zeroed. The owner publishes data by writing it and then
 * release-storing a word of its own protocol (a sequence number); a reader acquire-loads that
 * word before it reads the data. Nothing else is ordered: the protocol on top decides when a
 * region may be overwritten (e.g. double buffering by sequence parity).
 *
 * <p><b>Faults.</b> A reader that spins on a peer's window calls {@link #checkPeer} while it waits:
 * it fails, naming the peer, once the peer closed or aborted its transport or its process died,
 * and once this transport was aborted or closed. Peers' windows stay mapped until this
 * transport closes, so reading one never faults, even after the peer died.
 *
 * <p>Obtained with {@link Transport#sharedWindow()}; used by the same single thread that drives
 * the transport.
 */
public interface SharedWindow {

    /** Bytes in each rank's window (the same on every rank of the group). */
    long byteSize();

    /** This rank's window; only this rank writes it. */
    MemorySegment local();

    /**
     * The window of {@code peer} (read it, never write it); opens the connection to the peer on
     * first use, as {@link Transport#connection(int)} does.
     */
    MemorySegment peer(int peer);

    /**
     * Fails with a {@link TransportException} naming {@code peer} if it closed or aborted its
     * transport or its process is gone (the process check runs at most every few milliseconds),
     * or if this transport was closed or aborted. Cheap enough for every round of a spin wait;
     * allocates nothing while the peer is healthy.
     */
    void checkPeer(int peer);

    /**
     * Sleeps while the 32-bit word at {@code offset} of {@code peer}'s window holds {@code value},
     * at most {@code nanos}, until the owner calls {@link #wake} on it (a futex); returns false at
     * once, without sleeping, where the provider cannot do that (callers then poll). May return
     * early for no reason: callers re-check their condition.
     */
    default boolean sleepWhile(int peer, long offset, int value, long nanos) {
        return false;
    }

    /** Wakes every rank sleeping on the word at {@code offset} of this rank's window. */
    default void wake(long offset) {
    }
}
