package io.rdma4j.transport.internal;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * Registrations of caller-owned memory by (address, size): an open-addressing table, so looking
 * up a segment registered before allocates nothing (a map with boxed keys would). Shared by the
 * providers; not thread-safe (each transport's lock guards its cache). A segment's entry is also
 * keyed by whether the view is read-only ({@link #get(MemorySegment)}): a registration hands its
 * view to every operation on it, so a read-only view registered first must not become what a
 * later registration of the same memory for receiving gets.
 */
public final class RegistrationCache<B> {
    /**
     * Entries a bounded cache holds at most: the distinct (address, size) pairs of a training
     * job's buffers are few, while a caller slicing one buffer at random sizes makes a new pair
     * per call.
     */
    public static final int BOUNDED_ENTRIES = 4096;

    private final int maxEntries;
    private long[] addresses = new long[64];
    private long[] sizes = new long[64];
    private Object[] buffers = new Object[64];
    private int count;
    /** The tables' copies during {@link #removeIf}, kept so that a sweep allocates nothing. */
    private long[] scratchAddresses = new long[0];
    private long[] scratchSizes = new long[0];
    private Object[] scratchBuffers = new Object[0];

    /** A cache that keeps every entry until {@link #clear()} (its entries own native resources). */
    public RegistrationCache() {
        this(Integer.MAX_VALUE);
    }

    /**
     * A cache of at most {@code maxEntries}: adding one more forgets them all. Only for entries
     * that own no native resource (nothing to release when one is forgotten; a forgotten entry
     * still in use by a request stays valid and a later lookup makes a new one).
     */
    public RegistrationCache(int maxEntries) {
        if (maxEntries < 1) {
            throw new IllegalArgumentException("a registration cache needs room for an entry, got " + maxEntries);
        }
        this.maxEntries = maxEntries;
    }

    /** The registration of a view like {@code segment} (same address, size and read-only-ness). */
    public B get(MemorySegment segment) {
        return get(segment.address(), viewKey(segment));
    }

    /** Caches {@code buffer} for views like {@code segment}, replacing an earlier registration of that key. */
    public void put(MemorySegment segment, B buffer) {
        put(segment.address(), viewKey(segment), buffer);
    }

    /** The size, with the sign bit (no size has it) set for a read-only view. */
    private static long viewKey(MemorySegment segment) {
        return segment.isReadOnly() ? segment.byteSize() | Long.MIN_VALUE : segment.byteSize();
    }

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
        if (count == maxEntries) {
            clear();
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

    /**
     * Removes every entry {@code dead} accepts (called once per entry); returns how many.
     * Allocates nothing once it has run at the table's current size. An entry for which
     * {@code dead} throws stays; the sweep goes on over the others and then throws the first
     * such failure (the others suppressed in it), so that the table never loses the entries
     * after it.
     */
    @SuppressWarnings("unchecked")
    public int removeIf(Predicate<? super B> dead) {
        int n = buffers.length;
        if (scratchBuffers.length != n) {
            scratchAddresses = new long[n];
            scratchSizes = new long[n];
            scratchBuffers = new Object[n];
        }
        System.arraycopy(addresses, 0, scratchAddresses, 0, n);
        System.arraycopy(sizes, 0, scratchSizes, 0, n);
        System.arraycopy(buffers, 0, scratchBuffers, 0, n);
        Arrays.fill(buffers, null);
        int removed = 0;
        RuntimeException failure = null;
        for (int i = 0; i < n; i++) {
            if (scratchBuffers[i] == null) {
                continue;
            }
            boolean remove;
            try {
                remove = dead.test((B) scratchBuffers[i]);
            } catch (RuntimeException e) {
                remove = false;
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
            if (remove) {
                removed++;
            } else {
                insert(scratchAddresses[i], scratchSizes[i], scratchBuffers[i]);
            }
        }
        Arrays.fill(scratchBuffers, null); // the removed entries are garbage now
        count -= removed;
        if (failure != null) {
            throw failure;
        }
        return removed;
    }

    /** Calls {@code action} with every entry, in no particular order. */
    @SuppressWarnings("unchecked")
    public void forEach(Consumer<? super B> action) {
        for (Object b : buffers) {
            if (b != null) {
                action.accept((B) b);
            }
        }
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
