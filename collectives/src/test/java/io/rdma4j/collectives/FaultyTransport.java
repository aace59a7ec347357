package io.rdma4j.collectives;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.Transport;

import java.lang.foreign.MemorySegment;

/**
 * A transport that delegates everything and lets a test make registration or allocation fail
 * (memory a rank cannot pin, a JVM out of memory) by overriding {@link #beforeRegister} or
 * {@link #beforeAllocate}.
 */
class FaultyTransport implements Transport {
    private final Transport t;

    FaultyTransport(Transport t) {
        this.t = t;
    }

    /** Called before each registration; throws to refuse it. */
    void beforeRegister(MemorySegment segment) {
    }

    /** Called before each allocation; throws to refuse it. */
    void beforeAllocate(long bytes) {
    }

    @Override
    public RegisteredBuffer register(MemorySegment segment) {
        beforeRegister(segment);
        return t.register(segment);
    }

    @Override
    public RegisteredBuffer allocate(long bytes) {
        beforeAllocate(bytes);
        return t.allocate(bytes);
    }

    @Override public String provider() { return t.provider(); }
    @Override public int rank() { return t.rank(); }
    @Override public int size() { return t.size(); }
    @Override public Connection connection(int peer) { return t.connection(peer); }
    @Override public long test(long request) { return t.test(request); }
    @Override public long await(long request, long timeoutNanos) { return t.await(request, timeoutNanos); }
    @Override public void abort(Throwable cause) { t.abort(cause); }
    @Override public void close() { t.close(); }
}
