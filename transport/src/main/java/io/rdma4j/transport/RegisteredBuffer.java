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

    /**
     * Releases the registration: an allocated buffer goes back to its transport; a registration
     * of caller memory ({@link Transport#register}) is released now where it pins memory (verbs),
     * after which it must not be used, and registering the memory again makes a new one.
     * Idempotent.
     *
     * @throws IllegalStateException if a pending request still uses a registration of caller memory
     */
    @Override
    void close();
}
