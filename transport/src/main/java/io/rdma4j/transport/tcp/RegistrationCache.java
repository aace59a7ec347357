package io.rdma4j.transport.tcp;

/**
 * Registrations of caller-owned memory by (address, size): an open-addressing table, so looking
 * up a segment registered before allocates nothing (a map with boxed keys would).
 */
final class RegistrationCache {
    private long[] addresses = new long[64];
    private long[] sizes = new long[64];
    private TcpBuffer[] buffers = new TcpBuffer[64];
    private int count;

    TcpBuffer get(long address, long size) {
        int mask = buffers.length - 1;
        for (int i = hash(address, size) & mask; buffers[i] != null; i = (i + 1) & mask) {
            if (addresses[i] == address && sizes[i] == size) {
                return buffers[i];
            }
        }
        return null;
    }

    void put(long address, long size, TcpBuffer buffer) {
        if ((count + 1) * 2 > buffers.length) {
            grow();
        }
        insert(address, size, buffer);
        count++;
    }

    private void insert(long address, long size, TcpBuffer buffer) {
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
        TcpBuffer[] oldBuffers = buffers;
        addresses = new long[oldBuffers.length * 2];
        sizes = new long[oldBuffers.length * 2];
        buffers = new TcpBuffer[oldBuffers.length * 2];
        for (int i = 0; i < oldBuffers.length; i++) {
            if (oldBuffers[i] != null) {
                insert(oldAddresses[i], oldSizes[i], oldBuffers[i]);
            }
        }
    }

    void clear() {
        java.util.Arrays.fill(buffers, null);
        count = 0;
    }

    private static int hash(long address, long size) {
        long h = (address ^ (size * 0x9E3779B97F4A7C15L)) * 0xC2B2AE3D27D4EB4FL;
        return (int) (h ^ (h >>> 32));
    }
}
