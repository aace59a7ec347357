package io.rdma4j.transport;

/**
 * A reliable, ordered connection to one peer. Two-sided messages are matched by tag: a receive
 * for tag T takes the oldest message the peer sent with tag T, so independent streams (e.g.
 * sub-communicators) can share one connection. Messages of one tag arrive in the order sent.
 *
 * <p>Two-sided operations are receiver-driven (as NCCL's net transport): {@link #irecv} tells
 * the sender where the data may go and how much of it; {@link #isend} places the data there.
 * Small sends may travel eagerly instead (the verbs and TCP providers; as UCX's eager protocol):
 * into a bounded set of slots at the receiver, kept there until a receive of their tag is posted,
 * so an exchange does not wait a round trip for the receive's notice. Either way a receiver is
 * never overrun, and a send completes only once a receive took its message. Sending more bytes
 * than the matching receive offered fails both requests.
 */
public interface Connection {

    /** Marks a one-sided write that carries no immediate value. */
    long NO_IMMEDIATE = -1L;

    /** The peer's rank. */
    int peer();

    /** Sends {@code length} bytes of {@code source} from {@code offset} under {@code tag}. */
    long isend(RegisteredBuffer source, long offset, long length, int tag);

    /** Receives at most {@code capacity} bytes under {@code tag} into {@code target} at {@code offset}. */
    long irecv(RegisteredBuffer target, long offset, long capacity, int tag);

    /**
     * One-sided write of {@code length} bytes from {@code source} into the peer's
     * {@code target}; when {@code immediate} is not {@link #NO_IMMEDIATE} (an unsigned 32-bit
     * value), the peer is notified with it after all the data is visible (see
     * {@link #pollImmediate()}).
     */
    long write(RegisteredBuffer source, long sourceOffset, RemoteBuffer target, long targetOffset,
               long length, long immediate);

    /** One-sided read of {@code length} bytes of the peer's {@code source} into {@code target}. */
    long read(RegisteredBuffer target, long targetOffset, RemoteBuffer source, long sourceOffset,
              long length);

    /**
     * The oldest immediate value a peer's write delivered to this side and not yet taken, or
     * {@link #NO_IMMEDIATE} if none arrived. Drives progress. Values not taken are held, up to
     * 1024 per connection: beyond that the peer's writes with immediates wait until this side
     * polls, and so does what the peer posts to this side after them (on TCP, everything it
     * sends; on verbs, its operations queued behind them).
     */
    long pollImmediate();

    /** Hands every batched request of this connection to the network (one doorbell). */
    void flush();
}
