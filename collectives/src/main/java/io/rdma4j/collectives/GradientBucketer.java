package io.rdma4j.collectives;

import io.rdma4j.nativesupport.internal.BulkCopy;
import io.rdma4j.transport.RegisteredBuffer;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * DDP-style gradient fusion. A trainer registers its gradients once, in the reverse order of
 * their production in the backward pass (as DDP does); consecutive gradients are packed into
 * buckets of at most {@code bucketBytes} (default {@value #DEFAULT_BUCKET_BYTES} bytes; a larger
 * gradient gets a bucket of its own) allocated once from the communicator's registered memory.
 * When a bucket is complete during backward ({@link #markReady(int)}), its allreduce starts
 * asynchronously on the communicator's progress thread, overlapping with the rest of the
 * backward pass. {@link #finish(Duration)} waits for every bucket.
 *
 * <p>Two ways to hold the gradients:
 * <ul>
 * <li>{@link #withBucketViews}: the gradients live in the buckets (DDP's
 *     {@code gradient_as_bucket_view}); the trainer writes gradient i into {@link #gradient(int)}
 *     and finds the reduced values there after {@code finish}. Nothing is copied.
 * <li>the constructors: the trainer's own segments; {@code markReady} copies a gradient into its
 *     bucket, and the reduced values are copied back by the first {@code markReady} or
 *     {@code finish} that finds the bucket's allreduce done. So from {@code markReady(i)} until
 *     {@code finish} returns, gradient i belongs to the bucketer: the trainer must not write it,
 *     and what it reads there may be its own value or the reduced one. Copying a bucket back
 *     during the backward, while the trainer waits for its next layer anyway, keeps the copies
 *     of the buckets done early out of the time {@code finish} takes after the backward.
 * </ul>
 * The reduction is by default the average.
 *
 * <p>A trainer whose gradients are computed elsewhere (a GPU) need not wait for each one before
 * marking it: {@link #markReadyWhen} marks it with a condition that holds once it is computed
 * (its CUDA event reached, say), and the communicator's progress thread starts the bucket's
 * allreduce when the conditions of all its gradients hold, as a GPU stream waits on an event. The
 * trainer then marks the whole backward pass as it enqueues it and waits in {@code finish}; it
 * does not wake per layer.
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
    /** The gradients: the trainer's segments, or slices of the buckets when {@link #copies} is false. */
    private final MemorySegment[] grads;
    /** Whether gradients are copied into the buckets and back (the trainer's own segments). */
    private final boolean copies;
    private final int[] bucketOf;
    private final long[] offsetInBucket;
    private final RegisteredBuffer[] buckets;
    /** The used part of each bucket, sliced once: what its allreduce reduces. */
    private final MemorySegment[] bucketData;
    private final long[] bucketUsed;
    private final int[] gradsInBucket;
    private final int[] pending;
    private final boolean[] ready;
    /**
     * Each gradient's condition from {@link #markReadyWhen}, null when it was ready when marked
     * (cleared after each iteration, so that none is kept alive by the bucketer).
     */
    private final BooleanSupplier[] computed;
    /** What each bucket's allreduce waits for when a gradient of it was marked with a condition. */
    private final BucketInput[] inputs;
    private final Work[] works;
    /** The first gradient of each bucket (a bucket holds consecutive gradients). */
    private final int[] firstGradOf;
    private int nextToLaunch;
    /** Buckets before this one had their reduced values copied back into the trainer's gradients this iteration. */
    private int nextToCopyBack;
    private int marked;
    private boolean closed;
    /**
     * The failure of a bucket's allreduce, once one failed: the iteration's gradients are not
     * all reduced and that bucket's handle is gone, so a later finish must not report success.
     */
    private Throwable failure;
    private int failedBucket;

    /** Averages the trainer's gradient segments over the communicator with {@link #DEFAULT_BUCKET_BYTES} buckets. */
    public GradientBucketer(Communicator comm, DataType type, List<MemorySegment> gradients) {
        this(comm, type, gradients, DEFAULT_BUCKET_BYTES, ReduceOp.AVG);
    }

    /**
     * Reduces the trainer's gradient segments, copied into the buckets and back.
     *
     * @param gradients in reverse order of production (the last layer's first)
     */
    public GradientBucketer(Communicator comm, DataType type, List<MemorySegment> gradients, long bucketBytes,
                            ReduceOp op) {
        this(comm, type, sizesOf(gradients), gradients.toArray(new MemorySegment[0]), bucketBytes, op);
    }

    /**
     * The sizes of the trainer's gradients, each checked as the bucketer will use it: copied into
     * a bucket and the reduced values back, both inside markReady, where a failure would leave
     * that gradient's bucket unlaunched on this rank alone.
     */
    private static long[] sizesOf(List<MemorySegment> gradients) {
        if (gradients == null) {
            throw new IllegalArgumentException("gradients must not be null");
        }
        long[] sizes = new long[gradients.size()];
        for (int i = 0; i < sizes.length; i++) {
            MemorySegment g = gradients.get(i);
            if (g == null) {
                throw new IllegalArgumentException("gradient " + i + " is null");
            }
            if (g.isReadOnly()) {
                throw new IllegalArgumentException("gradient " + i + " is read-only: the reduced values are copied back into it");
            }
            if (!g.scope().isAlive()) {
                throw new IllegalArgumentException("gradient " + i + " was freed (its arena is closed)");
            }
            sizes[i] = g.byteSize();
        }
        return sizes;
    }

    /**
     * A bucketer whose gradients live in its buckets: gradient i is {@link #gradient(int)}, which
     * the trainer writes during backward and reads the reduced values from after {@code finish}.
     *
     * @param gradientBytes the gradients' sizes, in reverse order of production
     */
    public static GradientBucketer withBucketViews(Communicator comm, DataType type, long[] gradientBytes,
                                                   long bucketBytes, ReduceOp op) {
        if (gradientBytes == null) {
            throw new IllegalArgumentException("gradient sizes must not be null");
        }
        return new GradientBucketer(comm, type, gradientBytes.clone(), null, bucketBytes, op);
    }

    /** @param external the trainer's segments, or null for gradients that are views of the buckets */
    private GradientBucketer(Communicator comm, DataType type, long[] gradientBytes, MemorySegment[] external,
                             long bucketBytes, ReduceOp op) {
        if (type == null || op == null) {
            throw new IllegalArgumentException("data type and reduce op must not be null");
        }
        if (bucketBytes < type.byteSize()) {
            throw new IllegalArgumentException("bucket size " + bucketBytes + " smaller than one " + type + " element");
        }
        this.comm = comm;
        this.type = type;
        this.op = op;
        this.copies = external != null;
        int n = gradientBytes.length;
        this.bucketOf = new int[n];
        this.offsetInBucket = new long[n];
        List<Long> sizes = new ArrayList<>();
        List<Integer> counts = new ArrayList<>();
        long used = 0;
        for (int i = 0; i < n; i++) {
            long bytes = gradientBytes[i];
            if (bytes < 0 || bytes % type.byteSize() != 0) {
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
        bucketData = new MemorySegment[nb];
        bucketUsed = new long[nb];
        gradsInBucket = new int[nb];
        pending = new int[nb];
        works = new Work[nb];
        firstGradOf = new int[nb];
        for (int i = n - 1; i >= 0; i--) {
            firstGradOf[bucketOf[i]] = i;
        }
        ready = new boolean[n];
        computed = new BooleanSupplier[n];
        inputs = new BucketInput[nb];
        grads = copies ? external : new MemorySegment[n];
        try {
            for (int b = 0; b < nb; b++) {
                bucketUsed[b] = sizes.get(b);
                gradsInBucket[b] = counts.get(b);
                buckets[b] = comm.allocate(Math.max(bucketUsed[b], 8));
                bucketData[b] = buckets[b].segment().asSlice(0, bucketUsed[b]);
                inputs[b] = new BucketInput(b);
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        if (!copies) {
            for (int i = 0; i < n; i++) {
                grads[i] = bucketData[bucketOf[i]].asSlice(offsetInBucket[i], gradientBytes[i]);
            }
        }
        reset();
    }

    /**
     * Gradient {@code gradIndex}: a view of its bucket ({@link #withBucketViews}) or the
     * trainer's own segment.
     */
    public MemorySegment gradient(int gradIndex) {
        return grads[Objects.checkIndex(gradIndex, grads.length)];
    }

    public int bucketCount() {
        return buckets.length;
    }

    public int bucketOf(int gradIndex) {
        return bucketOf[gradIndex];
    }

    /** Whether the allreduce of bucket {@code b} was launched in this iteration. */
    public boolean isLaunched(int b) {
        return Objects.checkIndex(b, buckets.length) < nextToLaunch;
    }

    /**
     * Waits for the allreduce of bucket {@code b} in this iteration (launched, see
     * {@link #isLaunched}); the values are copied back into the gradients by {@link #finish}.
     *
     * @throws CollectiveTimeoutException if it did not complete within {@code timeout}
     * @throws CollectiveException        if it failed
     */
    public void awaitBucket(int b, Duration timeout) {
        checkOpen();
        if (!isLaunched(b)) {
            throw new IllegalStateException("bucket " + b + " of " + buckets.length + " was not launched yet");
        }
        awaitBucket(b, timeout, Math.max(0, TimeUnit.NANOSECONDS.convert(timeout)));
    }

    /** Waits for bucket {@code b}'s allreduce unless already awaited; its handle then goes back to the communicator. */
    private void awaitBucket(int b, Duration timeout, long timeoutNanos) {
        Work w = works[b];
        if (w == null) {
            return;
        }
        boolean done;
        try {
            done = w.awaitNanos(timeoutNanos);
        } catch (Work.InterruptedWait interrupted) {
            throw interrupted; // still running over this bucket: close() waits for it before freeing it
        } catch (RuntimeException | Error failed) { // an Error too: the handle went back all the same
            works[b] = null; // awaited: the handle belongs to the communicator again
            failure = failed;
            failedBucket = b;
            throw failed;
        }
        if (!done) { // still running over this bucket: close() waits for it before freeing it
            throw w.timedOut("allreduce of bucket " + b + " of " + buckets.length, timeout);
        }
        works[b] = null;
    }

    /**
     * Gradient {@code gradIndex} holds its final value for this iteration: copies it into its
     * bucket (unless it is a view of it) and launches every bucket that is complete and whose
     * predecessors were launched.
     */
    public void markReady(int gradIndex) {
        mark(gradIndex, null);
    }

    /**
     * Gradient {@code gradIndex} will hold its final value for this iteration once
     * {@code computed} returns true (and from then on): its bucket's allreduce is issued as by
     * {@link #markReady}, but starts on the communicator's progress thread only when the
     * conditions of all the bucket's gradients hold (or on a thread that awaits it, which then
     * waits for them itself). Only for {@link #withBucketViews bucket views}, whose gradients
     * are not copied when marked.
     *
     * <p>{@code computed} is polled from another thread, with the communicator's idle strategy,
     * until it holds; so it must be cheap, thread-safe, never block and never call a
     * communicator (a {@code CudaEvent::isComplete} of an event recorded before the mark, a
     * volatile flag). If it stays false for the communicator's timeout, or throws, the bucket's
     * allreduce fails on this rank and the peers' with it (the communicator breaks, as for any
     * failure inside a collective). The calls issued after it, on this communicator and on every
     * communicator split from the same world (they run one at a time), run after it, so a
     * condition that waits long holds them up too; and a trainer that has more calls waiting than
     * the communicator queues (64) runs the oldest itself when it issues the next, waiting for
     * its condition.
     *
     * @throws IllegalStateException if the gradients are copied (the constructors) or the gradient
     *                               was marked already in this iteration
     */
    public void markReadyWhen(int gradIndex, BooleanSupplier computed) {
        Objects.requireNonNull(computed, "computed");
        if (copies) {
            throw new IllegalStateException("markReadyWhen needs bucket views (withBucketViews): a copied gradient is "
                    + "copied into its bucket when marked, before its computation would have ended");
        }
        mark(gradIndex, computed);
    }

    private void mark(int gradIndex, BooleanSupplier condition) {
        checkOpen();
        if (gradIndex < 0 || gradIndex >= grads.length) {
            throw new IndexOutOfBoundsException("gradient " + gradIndex + " of " + grads.length);
        }
        if (ready[gradIndex]) {
            throw new IllegalStateException("gradient " + gradIndex + " marked ready twice in one iteration");
        }
        int b = bucketOf[gradIndex];
        if (copies) { // before the gradient counts as ready: a copy that fails (its memory freed) can be retried
            copyBackDone();
            BulkCopy.copy(grads[gradIndex], 0, bucketData[b], offsetInBucket[gradIndex],
                    grads[gradIndex].byteSize());
        }
        ready[gradIndex] = true;
        computed[gradIndex] = condition;
        marked++;
        pending[b]--;
        launchReady();
    }

    /**
     * Launches, in bucket order, every complete bucket whose predecessors were launched. A bucket
     * counts as launched only once its call was issued: one whose issue threw (a broken or closed
     * communicator) is issued again by the next markReady or by finish, which then throws too.
     */
    private void launchReady() {
        while (nextToLaunch < buckets.length && pending[nextToLaunch] == 0) {
            int k = nextToLaunch;
            long count = bucketUsed[k] / type.byteSize();
            works[k] = inputs[k].waits()
                    ? comm.allReduceAsyncWhen(bucketData[k], count, type, op, inputs[k].rewind())
                    : comm.allReduceAsync(bucketData[k], bucketData[k], count, type, op);
            nextToLaunch = k + 1;
        }
    }

    /**
     * Waits for every bucket's allreduce and copies the results back into the gradients (unless
     * they are views of the buckets), then resets for the next iteration.
     *
     * @throws IllegalStateException if a gradient was never marked ready (named), or a bucket's
     *                               allreduce failed in an earlier call (every call after that
     *                               fails so; the failure is the cause)
     * @throws CollectiveTimeoutException if the allreduces did not complete within {@code timeout}
     *                                    (this call's own bound: a later finish waits for them
     *                                    again; a call that the communicator's timeout failed is
     *                                    a failure as above)
     */
    public void finish(Duration timeout) {
        checkOpen();
        if (marked != grads.length) {
            for (int i = 0; i < grads.length; i++) {
                if (!ready[i]) {
                    throw new IllegalStateException("gradient " + i + " (bucket " + bucketOf[i]
                            + ") was not marked ready before finish()");
                }
            }
        }
        launchReady();
        long start = System.nanoTime();
        long timeoutNanos = TimeUnit.NANOSECONDS.convert(timeout); // saturates, unlike toNanos()
        // the last bucket first: calls complete in issue order, so this one wait covers them all and
        // its thread wakes once, not at every bucket (the loop below then finds them done; after a
        // timeout here, it reports the first bucket that failed or is still running)
        Work last = buckets.length == 0 ? null : works[buckets.length - 1];
        if (last != null) {
            last.awaitCompletionNanos(Math.max(1, timeoutNanos));
        }
        for (int b = 0; b < buckets.length; b++) {
            awaitBucket(b, timeout, Math.max(1, timeoutNanos - (System.nanoTime() - start)));
            if (copies && b >= nextToCopyBack) {
                copyBack(b);
            }
        }
        reset();
    }

    /**
     * Copies back, in bucket order, the buckets whose allreduce succeeded (failures are left
     * for {@code finish} or {@code awaitBucket} to report).
     */
    private void copyBackDone() {
        while (nextToCopyBack < nextToLaunch) {
            int b = nextToCopyBack;
            Work w = works[b];
            if (w != null) {
                if (!w.succeeded()) {
                    return;
                }
                awaitBucket(b, Duration.ZERO, 0); // done: returns at once and hands the handle back
            }
            copyBack(b);
            nextToCopyBack = b + 1;
        }
    }

    private void copyBack(int b) {
        for (int i = firstGradOf[b], end = i + gradsInBucket[b]; i < end; i++) {
            BulkCopy.copy(bucketData[b], offsetInBucket[i], grads[i], 0, grads[i].byteSize());
        }
    }

    private void reset() {
        for (int b = 0; b < buckets.length; b++) {
            pending[b] = gradsInBucket[b];
            works[b] = null;
        }
        Arrays.fill(ready, false);
        Arrays.fill(computed, null);
        nextToLaunch = 0;
        nextToCopyBack = 0;
        marked = 0;
    }

    /**
     * The conditions of one bucket's gradients as one, for its allreduce to wait on (preallocated:
     * marking with conditions allocates nothing per iteration). Polled by the thread that runs
     * the call, after the trainer issued it (the issue publishes {@link #computed}).
     */
    private final class BucketInput implements BooleanSupplier {
        private final int bucket;
        /** Gradients of the bucket before this one were found computed in this call's polls. */
        private int next;

        BucketInput(int bucket) {
            this.bucket = bucket;
        }

        /** Whether a gradient of the bucket was marked with a condition. */
        boolean waits() {
            for (int i = firstGradOf[bucket], end = i + gradsInBucket[bucket]; i < end; i++) {
                if (computed[i] != null) {
                    return true;
                }
            }
            return false;
        }

        /** Ready for a new call: polls from the bucket's first gradient. */
        BucketInput rewind() {
            next = firstGradOf[bucket];
            return this;
        }

        @Override
        public boolean getAsBoolean() {
            for (int end = firstGradOf[bucket] + gradsInBucket[bucket]; next < end; next++) {
                BooleanSupplier c = computed[next];
                if (c != null && !c.getAsBoolean()) {
                    return false;
                }
            }
            return true;
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("gradient bucketer is closed");
        }
        if (failure != null) {
            throw new IllegalStateException("gradient bucketer is unusable: the allreduce of bucket " + failedBucket
                    + " of " + buckets.length + " failed, so its iteration's gradients were not all reduced", failure);
        }
    }

    /**
     * Releases the buckets, after the launched allreduces not yet awaited, which use them, ended:
     * however long they take (a call that stops progressing fails after the communicator's
     * timeout), since a bucket freed under a running call is memory the transport still reads
     * and writes. An interrupt of the closing thread does not shorten that wait; it stays set.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        Error error = null;
        for (int b = 0; b < works.length; b++) {
            Work w = works[b];
            if (w != null) {
                works[b] = null; // awaited here: the handle is the communicator's again, for its next call
                try {
                    w.awaitUninterruptibly(); // an interrupted thread's close too: the call still uses the bucket
                } catch (RuntimeException ignored) {
                    // reported to whoever awaited it; the call is over, so its memory can go
                } catch (Error e) { // the call is over too: the other buckets are still awaited and freed
                    error = error == null ? e : error;
                }
            }
        }
        for (RegisteredBuffer b : buckets) {
            if (b != null) {
                b.close();
            }
        }
        if (error != null) {
            throw error;
        }
    }
}
