package io.rdma4j.transport.internal;

import java.util.Arrays;

/**
 * Registrations of caller-owned memory by (address, size): an open-addressing table, so looking
 * up a segment registered before allocates nothing (a map with boxed keys would). Shared by the
 * providers; not thread-safe (each transport's lock guards its cache).
 */
public final class RegistrationCache<B> {
    private long[] addresses = new long[64];
    private long[] sizes = new long[64];
    private Object[] buffers = new Object[64];
    private int count;

    @SuppressWarnings("unchecked")
    public B get(long address, long size) {
        int mask = buffers.length - 1;
        for (int i = hash(address, size) & mask; buffers[i] != null; i = (i + 1) & mask) {
            if (addresses[i] == address && sizes[i] == size) {
                return (B) buffers[i];
            }
        }
        return null;
    }

    /** Caches {@code buffer} for (address, size), replacing an earlier registration of that key. */
    public void put(long address, long size, B buffer) {
        int mask = buffers.length - 1;
        for (int i = hash(address, size) & mask; buffers[i] != null; i = (i + 1) & mask) {
            if (addresses[i] == address && sizes[i] == size) {
                buffers[i] = buffer;
                return;
            }
        }
        if ((count + 1) * 2 > buffers.length) {
            grow();
        }
        insert(address, size, buffer);
        count++;
    }

    private void insert(long address, long size, Object buffer) {
        int mask = buffers.length - 1;
        int i = hash(address, size) & mask;
        while (buffers[i] != null) {
            i = (i + 1) & mask;
        }
        addresses[i] = address;
        sizes[i] = size;
        buffers[i] = buffer;
    }

    private void grow() {
        long[] oldAddresses = addresses;
        long[] oldSizes = sizes;
        Object[] oldBuffers = buffers;
        addresses = new long[oldBuffers.length * 2];
        sizes = new long[oldBuffers.length * 2];
        buffers = new Object[oldBuffers.length * 2];
        for (int i = 0; i < oldBuffers.length; i++) {
            if (oldBuffers[i] != null) {
                insert(oldAddresses[i], oldSizes[i], oldBuffers[i]);
            }
        }
    }

    public int size() {
        return count;
    }

    public void clear() {
        Arrays.fill(buffers, null);
        count = 0;
    }

    private static int hash(long address, long size) {
        long h = (address ^ (size * 0x9E3779B97F4A7C15L)) * 0xC2B2AE3D27D4EB4FL;
        return (int) (h ^ (h >>> 32));
    }
}
