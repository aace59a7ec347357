package io.rdma4j.collectives;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** abort() of a split unblocks its calls even while the world, which shares its engine, is busy. */
class SplitAbortTest {

    /** What rank 1 does with its split while its world barrier holds the shared engine. */
    private interface BehindTheWorld {
        void run(Communicator split) throws Exception;
    }

    /**
     * On rank 1 a world barrier waits 3 s for rank 0 and holds the shared engine meanwhile, while
     * {@code body} runs with the split; aborting the split must end its calls' wait at once, not
     * when the world's call ends (up to the whole timeout).
     */
    private static void whileTheWorldIsBusy(BehindTheWorld body) throws Exception {
        LocalWorld.tcp(2, Duration.ofSeconds(30), (rank, world) -> {
            Communicator split = world.split(0, rank);
            if (rank == 1) {
                CompletableFuture<Void> worldBarrier = CompletableFuture.runAsync(world::barrier);
                Thread.sleep(300); // the world barrier holds the engine, waiting for rank 0
                body.run(split);
                worldBarrier.get(20, TimeUnit.SECONDS);
            } else {
                Thread.sleep(3000);
                world.barrier();
            }
            split.close();
        });
    }

    /** A split barrier on another thread waits for the engine when the split is aborted. */
    @Test
    void abortingASplitEndsItsCallWaitingBehindABusyWorld() throws Exception {
        whileTheWorldIsBusy(split -> {
            CompletableFuture<Throwable> splitBarrier = new CompletableFuture<>();
            Thread.ofPlatform().start(() -> {
                try {
                    split.barrier();
                    splitBarrier.complete(null);
                } catch (Throwable e) {
                    splitBarrier.complete(e);
                }
            });
            Thread.sleep(300); // the split barrier waits for the engine
            long start = System.nanoTime();
            split.abort();
            Throwable e = splitBarrier.get(10, TimeUnit.SECONDS);
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertInstanceOf(CommunicatorAbortedException.class, e);
            assertTrue(ms < 1000, "the aborted split's call ended " + ms + " ms after the abort");
        });
    }

    /**
     * Two asynchronous calls queued on the split wait for the engine; aborting the split fails
     * both at once, in issue order, and frees the progress thread, instead of leaving them queued
     * until the world's call ends.
     */
    @Test
    void abortingASplitFailsItsQueuedAsynchronousCallsWhileTheWorldIsBusy() throws Exception {
        whileTheWorldIsBusy(split -> {
            Work first = split.barrierAsync();
            Work second = split.barrierAsync();
            Thread.sleep(300); // the split's progress thread waits for the engine
            long start = System.nanoTime();
            split.abort();
            CollectiveException e1 = assertThrows(CollectiveException.class, () -> first.await(Duration.ofSeconds(10)));
            assertTrue(second.isDone(), "issue order: the second call completed with the first");
            CollectiveException e2 = assertThrows(CollectiveException.class, () -> second.await(Duration.ofSeconds(10)));
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertInstanceOf(CommunicatorAbortedException.class, e1);
            assertInstanceOf(CommunicatorAbortedException.class, e2);
            assertTrue(ms < 1000, "the aborted split's queued calls ended " + ms + " ms after the abort");
        });
    }
}
