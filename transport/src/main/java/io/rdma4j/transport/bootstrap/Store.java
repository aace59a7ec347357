package io.rdma4j.transport.bootstrap;

import java.time.Duration;

/**
 * The bootstrap key/value store through which ranks exchange endpoint descriptors (QPN, GID,
 * PSN, rkeys, shared-memory names, host:port). Every wait is bounded and its failure names the
 * key it waited for.
 */
public interface Store extends AutoCloseable {

    void set(String key, byte[] value);

    /** The value of {@code key}, waiting up to {@code timeout} for some rank to set it. */
    byte[] get(String key, Duration timeout);

    /** Atomically adds {@code delta} to the counter {@code key} (0 if absent); returns the new value. */
    long add(String key, long delta);

    /** Deletes {@code key}; returns whether it existed. */
    boolean delete(String key);

    /**
     * A view of this store whose keys are all prefixed with {@code prefix + "/"}; closing the
     * view leaves this store open.
     */
    default Store scoped(String prefix) {
        return new PrefixStore(this, prefix);
    }

    @Override
    void close();
}
