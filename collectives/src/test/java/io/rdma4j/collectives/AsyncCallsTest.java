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
     * Two threads of rank 0 await one handle while rank 1 joins late: both see the call's outcome,
     * and the handle goes back once, so the next two calls get two handles (a handle recycled twice
     * came back for both, and awaiting one of them returned while the other's call still ran).
     */
    @Test
    void threadsAwaitingOneHandleAllSeeItsOutcomeAndItComesBackOnce() throws Exception {
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                try (Communicator c = communicator(g, rank, AWAIT)) {
                    c.barrier(); // both connected
                    float[] v = {rank + 1};
                    if (rank == 1) {
                        Thread.sleep(500);
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
                    w.await(AWAIT);
                    other.join(30_000);
                    assertEquals(null, otherFailed.get(), "the second waiter saw the call succeed");
                    assertEquals(3f, v[0]);
                    Work a = c.barrierAsync();
                    Work b = c.barrierAsync();
                    assertNotSame(a, b, "one handle for two calls in flight");
                    a.await(AWAIT);
                    b.await(AWAIT);
                }
            });
        }
    }
}
