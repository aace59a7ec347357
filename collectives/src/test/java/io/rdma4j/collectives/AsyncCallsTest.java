package io.rdma4j.collectives;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Asynchronous calls on two ranks in this JVM: issue order, back-pressure, reused handles, failures. */
class AsyncCallsTest {
    private static final Duration AWAIT = Duration.ofSeconds(30);

    private static Communicator communicator(LocalGroup g, int rank, Duration timeout) {
        return Communicator.builder().transport(g.transport(rank)).store(g.store(rank))
                .options(CollectiveOptions.defaults().withTimeout(timeout)).build();
    }

    /**
     * Pairs of calls whose results depend on their order: call 2k doubles x in place, call 2k+1
     * copies x into out[k]; from x = 0.5 on both ranks, out[k] = 2^k only if each ran after the
     * one issued before it. Three queues' worth are issued before the first await, so issuing
     * must wait for room.
     */
    @Test
    void moreCallsThanTheQueueHoldsRunInIssueOrder() throws Exception {
        int pairs = 3 * IssueOrder.QUEUE_CAPACITY / 2;
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.SHM))) {
            g.run(Duration.ofMinutes(2), (rank, t, store) -> {
                try (Communicator c = communicator(g, rank, AWAIT); Arena arena = Arena.ofShared()) {
                    MemorySegment x = arena.allocate(8);
                    MemorySegment out = arena.allocate(8L * pairs);
                    x.set(ValueLayout.JAVA_DOUBLE, 0, 0.5);
                    Work[] works = new Work[2 * pairs];
                    for (int k = 0; k < pairs; k++) {
                        works[2 * k] = c.allReduceAsync(x, x, 1, DataType.F64, ReduceOp.SUM);
                        works[2 * k + 1] = c.allReduceAsync(x, out.asSlice(8L * k, 8), 1, DataType.F64, ReduceOp.MAX);
                    }
                    for (Work w : works) {
                        w.await(AWAIT);
                    }
                    for (int k = 0; k < pairs; k++) {
                        assertEquals(Math.scalb(1.0, k), out.getAtIndex(ValueLayout.JAVA_DOUBLE, k),
                                "rank " + rank + " pair " + k);
                    }
                }
            });
        }
    }

    @Test
    void anAwaitedHandleIsReusedAndCannotBeAwaitedAgain() throws Exception {
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                try (Communicator c = communicator(g, rank, AWAIT)) {
                    float[] one = {rank + 1};
                    MemorySegment data = MemorySegment.ofArray(one);
                    Work first = c.allReduceAsync(data, DataType.F32, ReduceOp.SUM);
                    first.await(AWAIT);
                    assertEquals(3f, one[0]);
                    IllegalStateException again = assertThrows(IllegalStateException.class, () -> first.await(AWAIT));
                    assertTrue(again.getMessage().contains("awaited already"), again.getMessage());
                    Work second = c.allReduceAsync(data, DataType.F32, ReduceOp.SUM);
                    assertSame(first, second, "an awaited handle is handed out again");
                    second.await(AWAIT);
                    assertEquals(6f, one[0]);

                    // the future view: completed with the call, and its handle is never reused
                    Work viewed = c.barrierAsync();
                    viewed.future().get(30, TimeUnit.SECONDS);
                    viewed.await(AWAIT);
                    viewed.await(AWAIT); // still this call's handle
                    Work next = c.barrierAsync();
                    assertNotSame(viewed, next);
                    next.await(AWAIT);
                }
            });
        }
    }

    /**
     * Rank 1 never joins: rank 0's first queued call times out blaming rank 1, the calls queued
     * behind it fail as broken, nothing hangs, and a later call is refused at issue.
     */
    @Test
    void aFailedCallFailsTheCallsQueuedBehindIt() throws Exception {
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                try (Communicator c = communicator(g, rank, Duration.ofSeconds(1))) {
                    c.barrier(); // both connected
                    if (rank == 1) {
                        Thread.sleep(3000);
                        return;
                    }
                    float[] v = new float[16];
                    Work[] works = new Work[3];
                    for (int k = 0; k < works.length; k++) {
                        works[k] = c.allReduceAsync(MemorySegment.ofArray(v), DataType.F32, ReduceOp.SUM);
                    }
                    CollectiveException first = assertThrows(CollectiveException.class, () -> works[0].await(AWAIT));
                    assertEquals(1, first.failedRank(), first.getMessage());
                    for (int k = 1; k < works.length; k++) {
                        Work queued = works[k];
                        CollectiveException later = assertThrows(CollectiveException.class, () -> queued.await(AWAIT));
                        assertTrue(later.getMessage().contains("broken"), later.getMessage());
                    }
                    assertThrows(CollectiveException.class, () -> c.allReduceAsync(MemorySegment.ofArray(v),
                            DataType.F32, ReduceOp.SUM));
                }
            });
        }
    }

    /**
     * A wait that runs out of its own bound while the progress thread drives the call names the
     * rank the call waits for (rank 1 joins late); the call goes on and its handle stays valid.
     */
    @Test
    void anAwaitThatRunsOutNamesTheRankTheCallWaitsFor() throws Exception {
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                try (Communicator c = communicator(g, rank, AWAIT)) {
                    c.barrier(); // both connected
                    float[] v = {rank + 1};
                    if (rank == 1) {
                        Thread.sleep(2000);
                        c.allReduce(v, ReduceOp.SUM);
                        assertEquals(3f, v[0]);
                        return;
                    }
                    Work w = c.allReduceAsync(MemorySegment.ofArray(v), DataType.F32, ReduceOp.SUM);
                    Thread.sleep(500); // the progress thread runs it and has stalled on rank 1
                    CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
                            () -> w.await(Duration.ofMillis(300)));
                    assertTrue(e.getMessage().contains("did not complete within 300 ms"), e.getMessage());
                    assertTrue(e.getMessage().contains("waits for rank 1"), e.getMessage());
                    assertEquals(1, e.failedRank(), e.getMessage());
                    w.await(AWAIT);
                    assertEquals(3f, v[0]);
                }
            });
        }
    }

    /**
     * Bad arguments are refused before a call takes its place in the issue order: a confined
     * buffer for an asynchronous call (its progress thread could not read it), a null operator
     * for reduce and reduceScatter; the communicator stays usable.
     */
    @Test
    void argumentsACallCannotRunWithAreRefusedWhenIssued() throws Exception {
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                try (Communicator c = communicator(g, rank, AWAIT); Arena confined = Arena.ofConfined();
                     Arena shared = Arena.ofShared()) {
                    MemorySegment mine = confined.allocate(16);
                    MemorySegment ok = shared.allocate(16);
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                            () -> c.allReduceAsync(mine, DataType.F32, ReduceOp.SUM));
                    assertTrue(e.getMessage().contains("confined"), e.getMessage());
                    assertThrows(IllegalArgumentException.class, () -> c.allReduceAsync(ok, mine, 4, DataType.F32,
                            ReduceOp.SUM));
                    assertThrows(IllegalArgumentException.class, () -> c.reduceScatter(ok, ok, 2, DataType.F32, null));
                    assertThrows(IllegalArgumentException.class, () -> c.reduce(ok, ok, 4, DataType.F32, null, 0));
                    ok.setAtIndex(ValueLayout.JAVA_FLOAT, 0, rank + 1);
                    c.allReduceAsync(ok, ok, 1, DataType.F32, ReduceOp.SUM).await(AWAIT);
                    assertEquals(3f, ok.getAtIndex(ValueLayout.JAVA_FLOAT, 0));
                    mine.setAtIndex(ValueLayout.JAVA_FLOAT, 0, rank + 1);
                    c.allReduce(mine, mine, 1, DataType.F32, ReduceOp.SUM); // a synchronous call may use it
                    assertEquals(3f, mine.getAtIndex(ValueLayout.JAVA_FLOAT, 0));
                }
            });
        }
    }

    /**
     * Rank 1's asynchronous call on a read-only buffer is refused when issued, so the calls issued
     * after it pair with rank 0's as issued: the refused call used to take a place in the queue,
     * fail when it ran, and the next call took its sequence number, reducing rank 0's first
     * vector with rank 1's second without an error.
     */
    @Test
    void anAsynchronousCallWithBadArgumentsIsRefusedWhenIssued() throws Exception {
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                try (Communicator c = communicator(g, rank, AWAIT); Arena shared = Arena.ofShared()) {
                    MemorySegment a = shared.allocate(4);
                    MemorySegment b = shared.allocate(4);
                    a.set(ValueLayout.JAVA_FLOAT, 0, 1 + rank);
                    b.set(ValueLayout.JAVA_FLOAT, 0, 10 * (1 + rank));
                    if (rank == 1) {
                        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                                () -> c.allReduceAsync(a.asReadOnly(), DataType.F32, ReduceOp.SUM));
                        assertTrue(e.getMessage().contains("read-only"), e.getMessage());
                        assertThrows(IllegalArgumentException.class, () -> c.sendAsync(a, 1, DataType.F32, 1));
                    }
                    Work first = c.allReduceAsync(a, DataType.F32, ReduceOp.SUM);
                    Work second = c.allReduceAsync(b, DataType.F32, ReduceOp.SUM);
                    first.await(AWAIT);
                    second.await(AWAIT);
                    assertEquals(3f, a.get(ValueLayout.JAVA_FLOAT, 0));
                    assertEquals(30f, b.get(ValueLayout.JAVA_FLOAT, 0));
                }
            });
        }
    }

    /**
     * A queued call whose buffer was freed after it was issued cannot run, and the other rank is
     * already in it: the communicator breaks on both ranks, naming the cause, instead of rank 1
     * failing that call alone (rank 0 then waited out its timeout, and rank 1's next call would
     * have paired with rank 0's one before it).
     */
    @Test
    void aQueuedCallWhoseBufferWasFreedBreaksTheCommunicator() throws Exception {
        java.util.concurrent.CountDownLatch freed = new java.util.concurrent.CountDownLatch(1);
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                try (Communicator c = communicator(g, rank, AWAIT); Arena kept = Arena.ofShared()) {
                    c.barrier(); // connected
                    MemorySegment v = kept.allocate(4);
                    Work held;
                    Work onFreed;
                    if (rank == 1) {
                        held = c.barrierAsync(); // runs until rank 0 joins: the next call waits in the queue
                        Arena gone = Arena.ofShared();
                        onFreed = c.allReduceAsync(gone.allocate(4), DataType.F32, ReduceOp.SUM);
                        gone.close();
                        freed.countDown();
                    } else {
                        assertTrue(freed.await(30, TimeUnit.SECONDS));
                        held = c.barrierAsync();
                        onFreed = c.allReduceAsync(v, DataType.F32, ReduceOp.SUM);
                    }
                    held.await(AWAIT);
                    CollectiveException e = assertThrows(CollectiveException.class, () -> onFreed.await(AWAIT));
                    assertTrue(e.getMessage().contains("freed"), "rank " + rank + ": " + e.getMessage());
                    assertThrows(CollectiveException.class, () -> c.allReduce(v, DataType.F32, ReduceOp.SUM),
                            "broken on rank " + rank);
                }
            });
        }
    }

    /**
     * Two threads of rank 0 await one handle while rank 1 joins only once both are in the wait:
     * both see the call's outcome, and the handle goes back once, so the next two calls get two
     * handles (a handle recycled twice came back for both, and awaiting one of them returned while
     * the other's call still ran).
     */
    @Test
    void threadsAwaitingOneHandleAllSeeItsOutcomeAndItComesBackOnce() throws Exception {
        java.util.concurrent.CountDownLatch bothWaiting = new java.util.concurrent.CountDownLatch(1);
        LocalWorld.tcp(2, AWAIT, (rank, c) -> {
            c.barrier(); // both connected
            float[] v = {rank + 1};
            if (rank == 1) {
                assertTrue(bothWaiting.await(30, TimeUnit.SECONDS));
                c.allReduce(v, ReduceOp.SUM);
                c.barrier();
                c.barrier();
                return;
            }
            Work w = c.allReduceAsync(MemorySegment.ofArray(v), DataType.F32, ReduceOp.SUM);
            java.util.concurrent.atomic.AtomicReference<Throwable> otherFailed = new java.util.concurrent.atomic.AtomicReference<>();
            Thread other = Thread.ofPlatform().start(() -> {
                try {
                    w.await(AWAIT);
                } catch (Throwable e) {
                    otherFailed.set(e);
                }
            });
            Thread.ofPlatform().daemon().start(() -> { // lets rank 1 in once both threads wait
                long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (w.awaiters() < 2 && System.nanoTime() - giveUp < 0) {
                    java.util.concurrent.locks.LockSupport.parkNanos(100_000);
                }
                bothWaiting.countDown();
            });
            while (w.awaiters() < 1 && other.isAlive()) { // the other thread first: then this one
                Thread.onSpinWait();
            }
            w.await(AWAIT);
            other.join(30_000);
            assertEquals(null, otherFailed.get(), "the second waiter saw the call succeed");
            assertEquals(3f, v[0]);
            Work a = c.barrierAsync();
            Work b = c.barrierAsync();
            assertNotSame(a, b, "one handle for two calls in flight");
            a.await(AWAIT);
            b.await(AWAIT);
        });
    }

    /** One round's issue and awaits of a world allreduce of {@code a} and a split allreduce of {@code b}. */
    private interface WorldAndSplitRound {
        void run(int rank, Communicator world, Communicator split, float[] a, float[] b);
    }

    /**
     * {@code rounds} rounds on two ranks over TCP, each a world allreduce (1 + 2) and a split
     * allreduce (10 + 20) as {@code round} issues and awaits them; a 3 s timeout.
     */
    private static void worldAndSplitRounds(int rounds, WorldAndSplitRound round) throws Exception {
        LocalWorld.tcp(2, Duration.ofSeconds(3), (rank, world) -> {
            try (Communicator split = world.split(0, rank)) {
                for (int k = 0; k < rounds; k++) {
                    float[] a = {rank + 1};
                    float[] b = {10 * (rank + 1)};
                    round.run(rank, world, split, a, b);
                    assertEquals(3f, a[0], "round " + k);
                    assertEquals(30f, b[0], "round " + k);
                }
            }
        });
    }

    /**
     * A world's and its split's asynchronous calls, issued in the same order on both ranks: rank 0
     * awaits the split's call first (so its thread runs that queue), rank 1 the world's. Each rank
     * must still run the world's call first, or each waits inside a different collective for the
     * other until the timeout.
     */
    @Test
    void callsOfAWorldAndItsSplitRunInIssueOrderWhicheverIsAwaitedFirst() throws Exception {
        worldAndSplitRounds(20, (rank, world, split, a, b) -> {
            Work wa = world.allReduceAsync(MemorySegment.ofArray(a), DataType.F32, ReduceOp.SUM);
            Work wb = split.allReduceAsync(MemorySegment.ofArray(b), DataType.F32, ReduceOp.SUM);
            (rank == 0 ? wb : wa).await(AWAIT);
            (rank == 0 ? wa : wb).await(AWAIT);
        });
    }

    /**
     * A synchronous call on a split between a world's asynchronous call and its await: the
     * world's progress thread and the split's caller meet at the shared engine, and on every rank
     * the world's call, issued first, must run first.
     */
    @Test
    void aSynchronousSplitCallRunsAfterTheWorldsCallIssuedBeforeIt() throws Exception {
        worldAndSplitRounds(100, (rank, world, split, a, b) -> {
            Work wa = world.allReduceAsync(MemorySegment.ofArray(a), DataType.F32, ReduceOp.SUM);
            split.allReduce(b, ReduceOp.SUM);
            wa.await(AWAIT);
        });
    }

    /**
     * A future's action issues another call while this thread's synchronous call waits for the
     * engine: had the action run on the progress thread that completed the first call (holding the
     * engine), it would have waited for this thread's issue lock, and this thread for the engine,
     * for good.
     */
    @Test
    void aFuturesActionThatIssuesACallDoesNotRunWhereTheEngineIsHeld() throws Exception {
        LocalWorld.tcp(2, Duration.ofSeconds(10), (rank, c) -> {
            c.barrier(); // both connected
            float[] v = {rank + 1};
            if (rank == 1) {
                c.barrier();
                Thread.sleep(500);
                c.allReduce(v, ReduceOp.SUM);
                c.barrier();
                c.barrier();
                return;
            }
            c.barrierAsync().await(AWAIT); // the progress thread is up
            Work w = c.allReduceAsync(MemorySegment.ofArray(v), DataType.F32, ReduceOp.SUM);
            java.util.concurrent.CompletableFuture<Work> next = w.future().thenApply(ignored -> c.barrierAsync());
            Thread.sleep(100); // the progress thread runs w, rank 1 is not there yet
            c.barrier();
            next.get(20, TimeUnit.SECONDS).await(AWAIT);
            assertEquals(3f, v[0]);
        });
    }

    /**
     * A split closed while its queued calls still run (rank 1 joins each 2.5 s late and only the
     * first two, the close waits up to the 4 s timeout, which falls during the second): close
     * returns only once no call uses the buffers any more, the running one finished and the one
     * still queued failed as closed, so every handle is done by then; before, it returned at its
     * deadline with a call still running on the progress thread, over memory the caller then frees.
     */
    @Test
    void closingASplitWaitsForTheCallItsProgressThreadRuns() throws Exception {
        LocalWorld.tcp(2, Duration.ofSeconds(4), (rank, world) -> {
            Communicator split = world.split(0, rank);
            float[][] v = new float[3][];
            if (rank == 1) {
                for (int k = 0; k < 2; k++) {
                    Thread.sleep(2500);
                    v[k] = new float[] {2};
                    split.allReduce(v[k], ReduceOp.SUM);
                }
                split.close();
                return;
            }
            Work[] works = new Work[v.length];
            for (int k = 0; k < v.length; k++) {
                v[k] = new float[] {1};
                works[k] = split.allReduceAsync(MemorySegment.ofArray(v[k]), DataType.F32, ReduceOp.SUM);
            }
            Thread.sleep(300); // the progress thread runs them (keeping the engine), not the close below
            split.close();
            for (int k = 0; k < v.length; k++) {
                assertTrue(works[k].isDone(), "call " + k + " still running after close returned");
            }
            works[0].await(AWAIT);
            works[1].await(AWAIT);
            assertEquals(3f, v[1][0], "the call that ran during close completed");
            IllegalStateException closed = assertThrows(IllegalStateException.class, () -> works[2].await(AWAIT));
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
        });
    }

    /**
     * A split aborted and closed while a world call waits for a late rank (3 s) and holds the
     * shared engine: the split has nothing running, so its close returns at once instead of
     * waiting for the world's call.
     */
    @Test
    void closingAnAbortedSplitDoesNotWaitForTheWorldsCall() throws Exception {
        LocalWorld.tcp(2, Duration.ofSeconds(10), (rank, world) -> {
            Communicator split = world.split(0, rank);
            float[] v = {rank + 1};
            if (rank == 1) {
                split.close();
                Thread.sleep(3000);
                world.allReduce(v, ReduceOp.SUM);
                assertEquals(3f, v[0]);
                return;
            }
            Work w = world.allReduceAsync(MemorySegment.ofArray(v), DataType.F32, ReduceOp.SUM);
            Thread.sleep(200); // the world's progress thread runs it, waiting for rank 1
            long start = System.nanoTime();
            split.abort();
            split.close();
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ms < 1500, "the aborted split's close took " + ms + " ms");
            w.await(AWAIT);
            assertEquals(3f, v[0]);
        });
    }
}
