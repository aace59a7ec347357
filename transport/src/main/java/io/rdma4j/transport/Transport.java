package io.rdma4j.transport;

import java.lang.foreign.MemorySegment;

/**
 * One process's (rank's) instance of a transport provider: registered memory and a connection to
 * every peer of its group. The collectives are written once against this contract; the verbs,
 * shared-memory and TCP providers implement it with the same semantics.
 *
 * <p>Operations return primitive request ids; {@link #test(long)} polls one on the caller's
 * thread (it also drives the provider's progress), so no completion is handed to another thread
 * just to wake a waiter. Nothing on the request path allocates in steady state.
 *
 * <p>Ordering rule: requests to one peer may be held in a per-connection batch (one doorbell for
 * many work requests) until {@link Connection#flush()}, {@link #test(long)} or
 * {@link #await(long, long)} is called on a request of that connection. Anything whose
 * correctness depends on the peer having seen an earlier request (a flag written after data, a
 * store message sent after a write) must come after a flush.
 */
public interface Transport extends AutoCloseable {

    /** Sentinel returned by {@link #test(long)} while a request is still in flight. */
    long PENDING = -1L;

    /** Provider name: {@code verbs}, {@code shm} or {@code tcp}. */
    String provider();

    int rank();

    int size();

    /**
     * Allocates memory that peers may write into and read from (one-sided), pre-registered with
     * the provider: registered verbs memory, a region of this rank's shared-memory file, or
     * plain off-heap memory for TCP. Freed when the buffer or the transport is closed.
     */
    RegisteredBuffer allocate(long bytes);

    /**
     * Registers caller-owned memory for use as a local source or destination of operations;
     * cached, so registering the same segment again returns the same registration and a training
     * step registers nothing (a read-only view and a writable view of the same memory are two
     * registrations: each operation uses its registration's view). Whether a peer may target it one-sided depends on the provider
     * ({@link RegisteredBuffer#remotelyAccessible()}). A registration that pins memory (verbs)
     * is released when the segment's memory is freed (its scope no longer alive, found at the
     * next new registration) unless a pending request uses it, when the caller closes it, or
     * when the transport closes.
     */
    RegisteredBuffer register(MemorySegment segment);

    /**
     * The connection to {@code peer} (a rank of this group other than {@link #rank()}),
     * established on first use through the bootstrap store; both sides must ask for it. Fails
     * with a {@link TransportException} naming the peer when it does not answer within the
     * configured timeout.
     */
    Connection connection(int peer);

    /**
     * Polls one request: {@link #PENDING} while it is in flight, else the number of bytes it
     * transferred, after which the id is released and must not be used again.
     *
     * @throws TransportException if the request failed (naming the peer), e.g. the peer died
     */
    long test(long request);

    /**
     * Polls {@code request} until it completes, with this transport's idle strategy between
     * polls. Returns the number of bytes transferred.
     *
     * @throws TransportTimeoutException naming the peer and operation when it did not complete
     */
    long await(long request, long timeoutNanos);

    /**
     * This rank's {@link SharedWindow} when the provider has one (shared memory) and nobody has
     * taken it yet, else null. At most one caller gets it per transport lifetime, because the
     * protocol state a window carries (sequence numbers) can only restart on every rank at once
     * when every window is new; a second communicator on the same transport uses requests.
     */
    default SharedWindow sharedWindow() {
        return null;
    }

    /**
     * Fails every pending and future operation with {@code cause}; used by a communicator's
     * abort so that no rank stays blocked. Idempotent.
     */
    void abort(Throwable cause);

    /**
     * Releases connections and memory; pending requests fail. Idempotent. At a peer, requests
     * this side had already served (a send whose receive it posted, a receive of what it sent)
     * still complete after this close; what is pending there beyond that fails, naming this rank.
     */
    @Override
    void close();
}
