package io.rdma4j.transport;

import java.lang.foreign.MemorySegment;

/** Memory registered with a transport: the local handle of a registration. */
public interface RegisteredBuffer extends AutoCloseable {

    /** The registered memory, for the owner's own reads and writes. */
    MemorySegment segment();

    default long byteSize() {
        return segment().byteSize();
    }

    /** Whether peers may target this buffer with one-sided writes and reads. */
    boolean remotelyAccessible();

    /**
     * The descriptor a peer needs to write into or read from this buffer, to be sent to it
     * (e.g. through the store or a message).
     *
     * @throws UnsupportedOperationException if not {@link #remotelyAccessible()}
     */
    RemoteBuffer remote();

    /** Deregisters (a no-op for cached registrations until the transport closes). Idempotent. */
    @Override
    void close();
}
