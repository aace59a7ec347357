package io.rdma4j.collectives;

import io.rdma4j.transport.RegisteredBuffer;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * DDP-style gradient fusion. A trainer registers its gradient segments once, in the reverse
 * order of their production in the backward pass (as DDP does); consecutive gradients are
 * packed into buckets of at most {@code bucketBytes} (default {@value #DEFAULT_BUCKET_BYTES}
 * bytes; a larger gradient gets a bucket of its own) allocated once from the communicator's
 * registered memory. During backward, {@link #markReady(int)} copies a gradient into its bucket;
 * when a bucket is complete its allreduce starts asynchronously on the communicator's worker
 * thread, overlapping with the rest of the backward pass. {@link #finish(Duration)} waits for
 * every bucket and copies the reduced (by default averaged) values back into the gradients.
 *
 * <p>Ordering: buckets are launched strictly in bucket order (bucket k only after bucket k-1),
 * whatever order gradients become ready in, so every rank issues the same collectives in the
 * same order even if its backward pass finishes gradients in a different order. Not
 * thread-safe: one trainer thread marks gradients and calls finish.
 */
public final class GradientBucketer implements AutoCloseable {
    public static final long DEFAULT_BUCKET_BYTES = 25L << 20;

    private final Communicator comm;
    private final DataType type;
    private final ReduceOp op;
    private final MemorySegment[] grads;
    private final int[] bucketOf;
    private final long[] offsetInBucket;
    private final RegisteredBuffer[] buckets;
    private final long[] bucketUsed;
    private final int[] gradsInBucket;
    private final int[] pending;
    private final boolean[] ready;
    private final Work[] works;
    private int nextToLaunch;
    private int marked;
    private boolean closed;

    /** Averages over the communicator with {@link #DEFAULT_BUCKET_BYTES} buckets. */
    public GradientBucketer(Communicator comm, DataType type, List<MemorySegment> gradients) {
        this(comm, type, gradients, DEFAULT_BUCKET_BYTES, ReduceOp.AVG);
    }

    /**
     * @param gradients in reverse order of production (the last layer's first)
     */
    public GradientBucketer(Communicator comm, DataType type, List<MemorySegment> gradients, long bucketBytes,
                            ReduceOp op) {
        if (bucketBytes < type.byteSize()) {
            throw new IllegalArgumentException("bucket size " + bucketBytes + " smaller than one " + type + " element");
        }
        this.comm = comm;
        this.type = type;
        this.op = op;
        this.grads = gradients.toArray(new MemorySegment[0]);
        this.bucketOf = new int[grads.length];
        this.offsetInBucket = new long[grads.length];
        List<Long> sizes = new ArrayList<>();
        List<Integer> counts = new ArrayList<>();
        long used = 0;
        for (int i = 0; i < grads.length; i++) {
            long bytes = grads[i].byteSize();
            if (bytes % type.byteSize() != 0) {
                throw new IllegalArgumentException("gradient " + i + " has " + bytes + " bytes, not a whole number of "
                        + type + " elements");
            }
            if (sizes.isEmpty() || used + bytes > bucketBytes && used > 0) {
                sizes.add(0L);
                counts.add(0);
                used = 0;
            }
            int b = sizes.size() - 1;
            bucketOf[i] = b;
            offsetInBucket[i] = used;
            used += bytes;
            sizes.set(b, used);
            counts.set(b, counts.get(b) + 1);
        }
        int nb = sizes.size();
        buckets = new RegisteredBuffer[nb];
        bucketUsed = new long[nb];
        gradsInBucket = new int[nb];
        pending = new int[nb];
        works = new Work[nb];
        ready = new boolean[grads.length];
        try {
            for (int b = 0; b < nb; b++) {
                bucketUsed[b] = sizes.get(b);
                gradsInBucket[b] = counts.get(b);
                buckets[b] = comm.allocate(Math.max(bucketUsed[b], 8));
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        reset();
    }

    public int bucketCount() {
        return buckets.length;
    }

    public int bucketOf(int gradIndex) {
        return bucketOf[gradIndex];
    }

    /** The allreduce of bucket {@code b} in this iteration, null while not yet launched. */
    public Work bucketWork(int b) {
        return works[b];
    }

    /**
     * Gradient {@code gradIndex} holds its final value for this iteration: copies it into its
     * bucket and launches every bucket that is complete and whose predecessors were launched.
     */
    public void markReady(int gradIndex) {
        if (closed) {
            throw new IllegalStateException("gradient bucketer is closed");
        }
        if (gradIndex < 0 || gradIndex >= grads.length) {
            throw new IndexOutOfBoundsException("gradient " + gradIndex + " of " + grads.length);
        }
        if (ready[gradIndex]) {
            throw new IllegalStateException("gradient " + gradIndex + " marked ready twice in one iteration");
        }
        ready[gradIndex] = true;
        marked++;
        int b = bucketOf[gradIndex];
        MemorySegment.copy(grads[gradIndex], 0, buckets[b].segment(), offsetInBucket[gradIndex],
                grads[gradIndex].byteSize());
        pending[b]--;
        while (nextToLaunch < buckets.length && pending[nextToLaunch] == 0) {
            int k = nextToLaunch++;
            MemorySegment data = buckets[k].segment().asSlice(0, bucketUsed[k]);
            works[k] = comm.allReduceAsync(data, data, bucketUsed[k] / type.byteSize(), type, op);
        }
    }

    /**
     * Waits for every bucket's allreduce and copies the results back into the gradients, then
     * resets for the next iteration.
     *
     * @throws IllegalStateException if a gradient was never marked ready (named)
     */
    public void finish(Duration timeout) {
        if (marked != grads.length) {
            for (int i = 0; i < grads.length; i++) {
                if (!ready[i]) {
                    throw new IllegalStateException("gradient " + i + " (bucket " + bucketOf[i]
                            + ") was not marked ready before finish()");
                }
            }
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        for (int b = 0; b < buckets.length; b++) {
            works[b].await(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
        }
        for (int i = 0; i < grads.length; i++) {
            MemorySegment.copy(buckets[bucketOf[i]].segment(), offsetInBucket[i], grads[i], 0, grads[i].byteSize());
        }
        reset();
    }

    private void reset() {
        for (int b = 0; b < buckets.length; b++) {
            pending[b] = gradsInBucket[b];
            works[b] = null;
        }
        java.util.Arrays.fill(ready, false);
        nextToLaunch = 0;
        marked = 0;
    }

    /** Releases the buckets (after waiting for launched allreduces, which read them). */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Work w : works) {
            if (w != null) {
                try {
                    w.await(comm.options().timeout());
                } catch (RuntimeException ignored) {
                    // reported to whoever awaited it; the memory is released regardless
                }
            }
        }
        for (RegisteredBuffer b : buckets) {
            if (b != null) {
                b.close();
            }
        }
    }
}
