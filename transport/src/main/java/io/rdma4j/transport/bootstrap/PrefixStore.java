package io.rdma4j.transport.bootstrap;

import java.time.Duration;

/**
 * A view of a store whose keys all carry a prefix, so that several transports or communicators
 * (or consecutive runs) can share one store without their keys colliding. Closing the view does
 * not close the underlying store.
 */
final class PrefixStore implements Store {
    private final Store delegate;
    private final String prefix;

    PrefixStore(Store delegate, String prefix) {
        if (prefix == null || prefix.isEmpty()) {
            throw new IllegalArgumentException("store prefix must not be empty");
        }
        this.delegate = delegate;
        this.prefix = prefix.endsWith("/") ? prefix : prefix + "/";
    }

    @Override
    public void set(String key, byte[] value) {
        delegate.set(prefix + key, value);
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        return delegate.get(prefix + key, timeout);
    }

    @Override
    public long add(String key, long delta) {
        return delegate.add(prefix + key, delta);
    }

    @Override
    public boolean delete(String key) {
        return delegate.delete(prefix + key);
    }

    @Override
    public void close() {
    }

    @Override
    public String toString() {
        return delegate + "[" + prefix + "]";
    }
}
