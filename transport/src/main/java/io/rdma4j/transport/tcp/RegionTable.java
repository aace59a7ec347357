package io.rdma4j.transport.tcp;

import io.rdma4j.transport.internal.LongRing;

import java.util.Arrays;

/**
 * The regions this rank opened for one-sided access by peers, by key ({@code generation << 32 |
 * index}, so a key of a freed region never reaches a later one). Every key, offset and length a
 * peer sends is resolved here before a byte is moved.
 */
final class RegionTable {
    private TcpBuffer[] regions = new TcpBuffer[16];
    private int[] generations = new int[16];
    private final LongRing free = new LongRing(16);
    private int used;

    long add(TcpBuffer b) {
        int index;
        if (!free.isEmpty()) {
            index = (int) free.poll();
        } else {
            if (used == regions.length) {
                regions = Arrays.copyOf(regions, used * 2);
                generations = Arrays.copyOf(generations, used * 2);
            }
            index = used++;
        }
        regions[index] = b;
        int gen = generations[index] = (generations[index] + 1) & 0x7FFFFFFF;
        return ((long) gen << 32) | index;
    }

    void remove(long key) {
        int index = (int) key;
        if (index >= 0 && index < used && regions[index] != null && generations[index] == (int) (key >>> 32)) {
            regions[index] = null;
            free.add(index);
        }
    }

    /** The live region {@code key} names if {@code [offset, offset + length)} lies inside it, else null. */
    TcpBuffer resolve(long key, long offset, long length) {
        int index = (int) key;
        if (index < 0 || index >= used || generations[index] != (int) (key >>> 32)) {
            return null;
        }
        TcpBuffer b = regions[index];
        if (b == null || offset < 0 || length < 0) {
            return null;
        }
        long size = b.segment().byteSize();
        return offset <= size && length <= size - offset ? b : null;
    }
}
