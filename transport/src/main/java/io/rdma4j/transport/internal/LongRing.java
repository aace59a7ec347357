package io.rdma4j.transport.internal;

/**
 * A FIFO of longs in a power-of-two ring that doubles when full, so it allocates only while it
 * grows to the largest backlog seen and never in steady state. Shared by the providers (request
 * ids, immediates, queued frames); not thread-safe.
 */
public final class LongRing {
    private long[] items;
    private int head;
    private int size;

    public LongRing(int initialCapacity) {
        items = new long[Integer.highestOneBit(Math.max(4, initialCapacity - 1)) << 1];
    }

    public boolean isEmpty() {
        return size == 0;
    }

    public int size() {
        return size;
    }

    public void add(long v) {
        if (size == items.length) {
            grow();
        }
        items[(head + size) & (items.length - 1)] = v;
        size++;
    }

    /** The {@code i}-th item from the head. */
    public long peek(int i) {
        return items[(head + i) & (items.length - 1)];
    }

    public long poll() {
        long v = items[head];
        head = (head + 1) & (items.length - 1);
        size--;
        return v;
    }

    public void skip(int n) {
        head = (head + n) & (items.length - 1);
        size -= n;
    }

    public void clear() {
        head = 0;
        size = 0;
    }

    private void grow() {
        long[] bigger = new long[items.length << 1];
        for (int i = 0; i < size; i++) {
            bigger[i] = peek(i);
        }
        items = bigger;
        head = 0;
    }
}
