package io.rdma4j.collectives;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link GradientBucketer} with gradients that live in its buckets or are copied, on two ranks in this JVM. */
class GradientBucketerTest {
    private static final Duration AWAIT = Duration.ofSeconds(30);

    /** Gradient i, element j on rank r: (r + 1) * (1000 i + j); the average over 2 ranks is 1.5 (1000 i + j). */
    private static float input(int rank, int i, long j) {
        return (rank + 1) * (1000f * i + j);
    }

    @Test
    void bucketViewsAreReducedInPlaceWithoutCopies() throws Exception {
        long[] bytes = {3000 * 4, 5000 * 4, 1 * 4, 12000 * 4, 700 * 4};
        viewsOnTwoShmRanks(bytes, (rank, bk) -> {
            assertTrue(bk.bucketCount() >= 2, "several buckets: " + bk.bucketCount());
            for (int i = 0; i < bytes.length; i++) {
                MemorySegment grad = bk.gradient(i);
                assertEquals(bytes[i], grad.byteSize());
                for (int k = 0; k < i; k++) { // views of distinct memory
                    MemorySegment other = bk.gradient(k);
                    assertTrue(grad.address() >= other.address() + other.byteSize()
                            || other.address() >= grad.address() + grad.byteSize(), "gradients " + k + " and " + i);
                }
            }
            assertThrows(IllegalStateException.class, () -> bk.awaitBucket(0, AWAIT));
            for (int iter = 0; iter < 3; iter++) {
                // produced last to first on rank 1: launches still go in bucket order
                for (int n = 0; n < bytes.length; n++) {
                    int i = rank == 0 ? n : bytes.length - 1 - n;
                    MemorySegment grad = bk.gradient(i);
                    for (long j = 0; j < bytes[i] / 4; j++) {
                        grad.setAtIndex(ValueLayout.JAVA_FLOAT, j, input(rank, i, j) + iter);
                    }
                    bk.markReady(i);
                }
                bk.finish(AWAIT);
                assertFalse(bk.isLaunched(0), "finish resets for the next iteration");
                for (int i = 0; i < bytes.length; i++) {
                    MemorySegment grad = bk.gradient(i);
                    for (long j = 0; j < bytes[i] / 4; j++) {
                        float want = (input(0, i, j) + input(1, i, j)) / 2 + iter;
                        assertEquals(want, grad.getAtIndex(ValueLayout.JAVA_FLOAT, j), Math.ulp(want) * 4,
                                "rank " + rank + " iteration " + iter + " gradient " + i + " element " + j);
                    }
                }
            }
        });
    }

    /**
     * The trainer marks every gradient at once, each with a condition, before anything is
     * computed, then computes them one by one, each condition turning true after its gradient
     * is written (the conditions are polled by the progress thread; the trainer never awaits
     * before finish, so it is never the one that waits for them). Bucket 0 holds gradients 0 and
     * 1: with gradient 0 computed and 1 not, its allreduce must not have run (gradient 0 still
     * holds this rank's own values, not the average); and the allreduce must reduce the values
     * written before the conditions turned true (one that ran at once would have averaged the
     * -1 left in the buckets). Two iterations with conditions (each bucket's polling starts
     * afresh), then one marked plainly.
     */
    @Test
    void gradientsMarkedWithConditionsAreReducedOnlyOnceTheyHold() throws Exception {
        long[] bytes = {3000 * 4, 5000 * 4, 12000 * 4};
        viewsOnTwoShmRanks(bytes, (rank, bk) -> {
            assertEquals(2, bk.bucketCount(), "gradients 0 and 1 in one bucket, 2 in another");
            assertEquals(0, bk.bucketOf(1));
            for (int iter = 0; iter < 3; iter++) {
                boolean withConditions = iter < 2;
                for (int i = 0; i < bytes.length; i++) {
                    for (long j = 0; j < bytes[i] / 4; j++) {
                        bk.gradient(i).setAtIndex(ValueLayout.JAVA_FLOAT, j, -1f);
                    }
                }
                AtomicBoolean[] computed = new AtomicBoolean[bytes.length];
                for (int i = 0; i < bytes.length; i++) {
                    computed[i] = new AtomicBoolean();
                    if (withConditions) {
                        bk.markReadyWhen(i, computed[i]::get);
                    }
                }
                if (withConditions) {
                    assertTrue(bk.isLaunched(1), "every bucket is issued when its gradients are marked");
                }
                for (int i = 0; i < bytes.length; i++) {
                    for (long j = 0; j < bytes[i] / 4; j++) {
                        bk.gradient(i).setAtIndex(ValueLayout.JAVA_FLOAT, j, input(rank, i, j) + iter);
                    }
                    computed[i].set(true);
                    if (withConditions && i == 0) {
                        Thread.sleep(300); // the progress thread polls meanwhile
                        assertEquals(input(rank, 0, 7) + iter, bk.gradient(0).getAtIndex(ValueLayout.JAVA_FLOAT, 7),
                                "bucket 0 was reduced while gradient 1's condition was false (iteration " + iter + ")");
                    }
                    if (!withConditions) {
                        bk.markReady(i);
                    }
                }
                bk.finish(AWAIT);
                for (int i = 0; i < bytes.length; i++) {
                    for (long j = 0; j < bytes[i] / 4; j++) {
                        float want = (input(0, i, j) + input(1, i, j)) / 2 + iter;
                        assertEquals(want, bk.gradient(i).getAtIndex(ValueLayout.JAVA_FLOAT, j),
                                Math.ulp(want) * 4, "rank " + rank + " iteration " + iter + " gradient " + i
                                        + " element " + j);
                    }
                }
            }
        });
    }

    @Test
    void markReadyWhenNeedsBucketViewsAndACondition() throws Exception {
        try (LocalGroup g = LocalGroup.start(1, LocalGroup.config(TransportConfig.Provider.TCP));
             Communicator c = Communicator.builder().transport(g.transport(0)).store(g.store(0)).build();
             java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared()) {
            try (GradientBucketer copied = new GradientBucketer(c, DataType.F32, java.util.List.of(arena.allocate(64)),
                    64, ReduceOp.SUM)) {
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> copied.markReadyWhen(0, () -> true));
                assertTrue(e.getMessage().contains("bucket views"), e.getMessage());
            }
            try (GradientBucketer views = GradientBucketer.withBucketViews(c, DataType.F32, new long[] {64}, 64,
                    ReduceOp.SUM)) {
                assertThrows(NullPointerException.class, () -> views.markReadyWhen(0, null));
                views.markReadyWhen(0, () -> true);
                assertThrows(IllegalStateException.class, () -> views.markReadyWhen(0, () -> true),
                        "marked twice in one iteration");
                views.finish(AWAIT);
            }
        }
    }

    /**
     * A condition that never holds (a GPU that hangs) or throws fails the bucket's allreduce on
     * its rank after the communicator's timeout, or at once, and the peer, which marked its
     * gradient ready, fails too, naming that rank: nobody waits forever.
     */
    @Test
    void aConditionThatNeverHoldsOrThrowsFailsTheBucketOnEveryRankNamingItsRank() throws Exception {
        for (boolean throwing : new boolean[] {false, true}) {
            LocalWorld.tcp(2, Duration.ofSeconds(1), (rank, c) -> {
                try (GradientBucketer bk = GradientBucketer.withBucketViews(c, DataType.F32, new long[] {64}, 64,
                        ReduceOp.SUM)) {
                    if (rank == 0) {
                        bk.markReadyWhen(0, () -> {
                            if (throwing) {
                                throw new IllegalStateException("device fault (test)");
                            }
                            return false;
                        });
                    } else {
                        bk.markReady(0);
                    }
                    CollectiveException e = assertThrows(CollectiveException.class, () -> bk.finish(AWAIT));
                    assertEquals(0, e.failedRank(), "rank " + rank + ": " + e);
                    String said = withCauses(e);
                    if (rank == 0 || throwing) { // rank 0 posts its fault at once: rank 1's next board check finds it
                        String why = throwing ? "device fault (test)" : "was not ready";
                        assertTrue(said.contains(why), "rank " + rank + ": " + said);
                    } else { // rank 1 times out itself or finds rank 0's post; either way rank 0 was in the call
                        assertTrue(said.contains("rank 0") && !said.contains("never reported being stalled"),
                                "rank 1: " + said);
                    }
                }
            });
        }
    }

    /** One rank's part of {@link #viewsOnTwoShmRanks}. */
    private interface ViewsRank {
        void run(int rank, GradientBucketer bk) throws Exception;
    }

    /**
     * Two ranks over shm, each with a bucketer of bucket views of {@code bytes} that averages in
     * 32 KiB buckets, running {@code body}.
     */
    private static void viewsOnTwoShmRanks(long[] bytes, ViewsRank body) throws Exception {
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.SHM))) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                try (Communicator c = Communicator.builder().transport(t).store(store)
                        .options(CollectiveOptions.defaults().withTimeout(AWAIT)).build();
                     GradientBucketer bk = GradientBucketer.withBucketViews(c, DataType.F32, bytes, 32 << 10,
                             ReduceOp.AVG)) {
                    body.run(rank, bk);
                }
            });
        }
    }

    /** The messages of {@code t}, its causes and their suppressed exceptions, one per line. */
    private static String withCauses(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            b.append(c).append('\n');
            for (Throwable s : c.getSuppressed()) {
                b.append(s).append('\n');
            }
        }
        return b.toString();
    }

    @Test
    void copiedGradientsOfABucketDoneDuringTheBackwardAreWrittenBackBeforeFinish() throws Exception {
        int elements = 1000;
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.SHM))) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined();
                     Communicator c = Communicator.builder().transport(t).store(store)
                             .options(CollectiveOptions.defaults().withTimeout(AWAIT)).build()) {
                    MemorySegment[] grads = new MemorySegment[3];
                    for (int i = 0; i < grads.length; i++) {
                        grads[i] = arena.allocate(elements * 4L, 4);
                    }
                    // one gradient per bucket
                    try (GradientBucketer bk = new GradientBucketer(c, DataType.F32, java.util.List.of(grads),
                            elements * 4L, ReduceOp.AVG)) {
                        assertEquals(3, bk.bucketCount());
                        for (int iter = 0; iter < 2; iter++) {
                            for (int i = 0; i < grads.length; i++) {
                                for (long j = 0; j < elements; j++) {
                                    grads[i].setAtIndex(ValueLayout.JAVA_FLOAT, j, input(rank, i, j) + iter);
                                }
                            }
                            bk.markReady(0);
                            bk.awaitBucket(0, AWAIT);
                            assertEquals(input(rank, 0, 7) + iter, grads[0].getAtIndex(ValueLayout.JAVA_FLOAT, 7),
                                    "awaiting a bucket copies nothing back by itself");
                            bk.markReady(1);
                            float want = (input(0, 0, 7) + input(1, 0, 7)) / 2 + iter;
                            assertEquals(want, grads[0].getAtIndex(ValueLayout.JAVA_FLOAT, 7),
                                    "the next markReady copied bucket 0 back (rank " + rank + ", iteration " + iter + ")");
                            bk.markReady(2);
                            bk.finish(AWAIT);
                            for (int i = 0; i < grads.length; i++) {
                                for (long j = 0; j < elements; j++) {
                                    float w = (input(0, i, j) + input(1, i, j)) / 2 + iter;
                                    assertEquals(w, grads[i].getAtIndex(ValueLayout.JAVA_FLOAT, j), Math.ulp(w) * 4,
                                            "rank " + rank + " iteration " + iter + " gradient " + i + " element " + j);
                                }
                            }
                        }
                    }
                }
            });
        }
    }

    @Test
    void gradientSizesThatAreNotWholeElementsAreRefused() throws Exception {
        try (LocalGroup g = LocalGroup.start(1, LocalGroup.config(TransportConfig.Provider.TCP));
             Communicator c = Communicator.builder().transport(g.transport(0)).store(g.store(0)).build()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> GradientBucketer.withBucketViews(c, DataType.F32, new long[] {8, 6}, 1024, ReduceOp.AVG));
            assertTrue(e.getMessage().contains("gradient 1 has 6 bytes"), e.getMessage());
        }
    }

    /** A model without gradients (or a rank that holds none of them) finishes its steps at once. */
    @Test
    void aBucketerWithoutGradientsFinishesEmptySteps() throws Exception {
        try (LocalGroup g = LocalGroup.start(1, LocalGroup.config(TransportConfig.Provider.TCP));
             Communicator c = Communicator.builder().transport(g.transport(0)).store(g.store(0)).build();
             GradientBucketer views = GradientBucketer.withBucketViews(c, DataType.F32, new long[0], 1024, ReduceOp.SUM);
             GradientBucketer copies = new GradientBucketer(c, DataType.F32, java.util.List.of(), 1024, ReduceOp.SUM)) {
            for (int step = 0; step < 2; step++) {
                views.finish(AWAIT);
                copies.finish(AWAIT);
            }
            assertEquals(0, views.bucketCount());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new GradientBucketer(c, DataType.F32, null, 1024, ReduceOp.SUM));
            assertEquals("gradients must not be null", e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> GradientBucketer.withBucketViews(c, DataType.F32, null, 1024, ReduceOp.SUM));
            assertEquals("gradient sizes must not be null", e.getMessage());
        }
    }

    /**
     * A gradient the bucketer cannot copy back into is refused when the bucketer is made, and one
     * whose copy into its bucket fails (its memory freed) does not count as ready: markReady
     * throws the copy's failure again and finish names the gradient. It used to count as ready
     * before the copy, so a retry said "marked ready twice" and its bucket never launched.
     */
    @Test
    void aGradientThatCannotBeCopiedIsNotCountedAsReady() throws Exception {
        try (LocalGroup g = LocalGroup.start(1, LocalGroup.config(TransportConfig.Provider.TCP));
             Communicator c = Communicator.builder().transport(g.transport(0)).store(g.store(0)).build();
             java.lang.foreign.Arena kept = java.lang.foreign.Arena.ofShared()) {
            MemorySegment g0 = kept.allocate(16, 4);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new GradientBucketer(c,
                    DataType.F32, java.util.List.of(g0, kept.allocate(16, 4).asReadOnly()), 16, ReduceOp.SUM));
            assertTrue(e.getMessage().contains("gradient 1 is read-only"), e.getMessage());
            java.lang.foreign.Arena gone = java.lang.foreign.Arena.ofShared();
            MemorySegment g1 = gone.allocate(16, 4);
            try (GradientBucketer bk = new GradientBucketer(c, DataType.F32, java.util.List.of(g0, g1), 16, ReduceOp.SUM)) {
                assertEquals(2, bk.bucketCount());
                gone.close();
                bk.markReady(0);
                assertThrows(IllegalStateException.class, () -> bk.markReady(1));
                IllegalStateException again = assertThrows(IllegalStateException.class, () -> bk.markReady(1));
                assertFalse(again.getMessage().contains("twice"), again.getMessage());
                assertFalse(bk.isLaunched(1));
                IllegalStateException notReady = assertThrows(IllegalStateException.class, () -> bk.finish(AWAIT));
                assertTrue(notReady.getMessage().contains("gradient 1 (bucket 1) was not marked ready"),
                        notReady.getMessage());
            }
        }
    }

    @Test
    void aBucketWhoseLaunchThrewIsNotReportedAsReduced() throws Exception {
        try (LocalGroup g = LocalGroup.start(1, LocalGroup.config(TransportConfig.Provider.TCP));
             Communicator c = Communicator.builder().transport(g.transport(0)).store(g.store(0)).build();
             GradientBucketer bk = GradientBucketer.withBucketViews(c, DataType.F32, new long[] {16}, 16, ReduceOp.SUM)) {
            c.abort();
            assertThrows(CollectiveException.class, () -> bk.markReady(0));
            assertFalse(bk.isLaunched(0), "its allreduce was never issued");
            assertThrows(CollectiveException.class, () -> bk.finish(AWAIT), "finish issues it again and fails as it does");
        }
    }

    /**
     * A bucket whose allreduce failed (the peer aborted) is not reduced: a finish called again
     * after the failing one must not report the iteration as done, nor may the next iteration
     * start as if nothing happened.
     */
    @Test
    void aFinishAfterAFailedAllReduceDoesNotReportSuccess() throws Exception {
        LocalWorld.tcp(2, Duration.ofSeconds(5), (rank, c) -> {
            if (rank == 1) {
                c.abort();
                return;
            }
            try (GradientBucketer bk = GradientBucketer.withBucketViews(c, DataType.F32, new long[] {64}, 64, ReduceOp.SUM)) {
                bk.markReady(0);
                CollectiveException failed = assertThrows(CollectiveException.class, () -> bk.finish(AWAIT));
                IllegalStateException again = assertThrows(IllegalStateException.class, () -> bk.finish(AWAIT));
                assertTrue(again.getMessage().contains("allreduce of bucket 0 of 1 failed"), again.getMessage());
                assertEquals(failed, again.getCause());
                assertThrows(IllegalStateException.class, () -> bk.markReady(0));
            }
        });
    }

    /**
     * A bucket whose allreduce failed with an Error before it started (rank 0 out of memory for
     * the staging it allocates on first use) makes the bucketer unusable as a failure does: the
     * Error reaches the caller, and a second finish says which bucket failed instead of awaiting
     * a handle that went back to the communicator.
     */
    @Test
    void anErrorOfABucketsAllReduceMakesTheBucketerUnusableAsAFailureDoes() throws Exception {
        java.util.concurrent.atomic.AtomicBoolean outOfMemory = new java.util.concurrent.atomic.AtomicBoolean();
        long bytes = 256 << 10; // the ring: staging allocated at its first call
        LocalWorld.run(TransportConfig.Provider.TCP, 2, Duration.ofSeconds(5), (rank, t) -> rank == 1 ? t
                : new FaultyTransport(t) {
                    @Override
                    void beforeAllocate(long n) {
                        if (outOfMemory.get()) {
                            throw new OutOfMemoryError("no memory for " + n + " bytes of staging (test)");
                        }
                    }
                }, (rank, c) -> {
            try (GradientBucketer bk = GradientBucketer.withBucketViews(c, DataType.F32, new long[] {bytes}, bytes,
                    ReduceOp.SUM)) {
                if (rank == 1) {
                    bk.markReady(0);
                    assertThrows(CollectiveException.class, () -> bk.finish(AWAIT));
                    return;
                }
                outOfMemory.set(true);
                bk.markReady(0);
                OutOfMemoryError e = assertThrows(OutOfMemoryError.class, () -> bk.finish(AWAIT));
                IllegalStateException again = assertThrows(IllegalStateException.class, () -> bk.finish(AWAIT));
                assertTrue(again.getMessage().contains("allreduce of bucket 0 of 1 failed"), again.getMessage());
                assertEquals(e, again.getCause());
            }
        });
    }

    /**
     * A closed bucketer refuses every call: its handles went back to the communicator, which may
     * have given them to another call since (here: the allreduce issued after close), and its
     * buckets are freed.
     */
    @Test
    void aClosedBucketerRefusesFinishAndAwait() throws Exception {
        try (LocalGroup g = LocalGroup.start(1, LocalGroup.config(TransportConfig.Provider.TCP));
             Communicator c = Communicator.builder().transport(g.transport(0)).store(g.store(0)).build()) {
            GradientBucketer bk = GradientBucketer.withBucketViews(c, DataType.F32, new long[] {16}, 16, ReduceOp.SUM);
            bk.markReady(0);
            bk.close();
            Work other = c.allReduceAsync(MemorySegment.ofArray(new float[4]), DataType.F32, ReduceOp.SUM);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> bk.finish(AWAIT));
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
            assertThrows(IllegalStateException.class, () -> bk.awaitBucket(0, AWAIT));
            assertThrows(IllegalStateException.class, () -> bk.markReady(0));
            other.await(AWAIT); // still the other call's handle: not awaited, nor recycled, by the closed bucketer
        }
    }

    /** One rank's part of {@link #oneBucketOnTwoRanks}. */
    private interface OneBucketRank {
        void run(Communicator c, GradientBucketer bk) throws Exception;
    }

    /**
     * Two ranks over TCP with the communicator timeout {@code timeout}, each with one 64 KiB
     * bucket holding {@code rank + 1} at element 5, running their part; then a barrier, which
     * passes only when neither rank's communicator broke.
     */
    private static void oneBucketOnTwoRanks(Duration timeout, OneBucketRank rank0, OneBucketRank rank1) throws Exception {
        long bytes = 1 << 16;
        LocalWorld.tcp(2, timeout, (rank, c) -> {
            GradientBucketer bk = GradientBucketer.withBucketViews(c, DataType.F32, new long[] {bytes}, bytes,
                    ReduceOp.SUM);
            bk.gradient(0).fill((byte) 0);
            bk.gradient(0).setAtIndex(ValueLayout.JAVA_FLOAT, 5, rank + 1f);
            (rank == 0 ? rank0 : rank1).run(c, bk);
            c.barrier();
        });
    }

    /** Rank 1's side of the tests below: its half of the allreduce, after {@code delayMs}. */
    private static void joinLate(GradientBucketer bk, long delayMs) throws InterruptedException {
        Thread.sleep(delayMs);
        bk.markReady(0);
        bk.finish(AWAIT);
        assertEquals(3f, bk.gradient(0).getAtIndex(ValueLayout.JAVA_FLOAT, 5));
        bk.close();
    }

    /**
     * A training thread that carries an interrupt (a cancelled task, shutdownNow) must not free a
     * bucket under its running allreduce: the interrupted finish leaves the call running, and
     * close still waits for it.
     */
    @Test
    void anInterruptedThreadsFinishAndCloseDoNotFreeABucketUnderItsAllReduce() throws Exception {
        oneBucketOnTwoRanks(Duration.ofSeconds(5), (c, bk) -> {
            bk.markReady(0);
            Thread.sleep(100); // the progress thread is running it, not this thread
            Thread.currentThread().interrupt();
            CollectiveException e = assertThrows(CollectiveException.class, () -> bk.finish(AWAIT));
            assertTrue(e.getMessage().contains("interrupted"), e.getMessage());
            long start = System.nanoTime();
            bk.close(); // the thread is still interrupted
            assertTrue(System.nanoTime() - start > Duration.ofMillis(1000).toNanos(),
                    "close returned before the allreduce could have ended");
            assertTrue(Thread.interrupted(), "close kept the interrupt for its caller");
        }, (c, bk) -> joinLate(bk, 1500));
    }

    /**
     * close() frees the buckets only after their allreduce ended, even when that takes longer than
     * the communicator's timeout because calls queued ahead of it took their time (each within the
     * timeout): on rank 0 a barrier and the allreduce wait 1.5 s each for rank 1.
     */
    @Test
    void closeWaitsForALaunchedAllReduceHoweverLongItTakes() throws Exception {
        oneBucketOnTwoRanks(Duration.ofSeconds(2), (c, bk) -> {
            Work barrier = c.barrierAsync();
            bk.markReady(0);
            Thread.sleep(100); // the progress thread is running them, not close()'s own thread
            long start = System.nanoTime();
            bk.close();
            assertTrue(System.nanoTime() - start > Duration.ofMillis(2500).toNanos(),
                    "close returned before the allreduce could have ended");
            barrier.await(AWAIT);
        }, (c, bk) -> {
            Thread.sleep(1500);
            c.barrier();
            joinLate(bk, 1500);
        });
    }
}
