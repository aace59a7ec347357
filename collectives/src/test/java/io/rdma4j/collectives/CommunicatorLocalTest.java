package io.rdma4j.collectives;

import io.rdma4j.collectives.core.Engine;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportTimeoutException;
import io.rdma4j.transport.bootstrap.FileStore;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A one-rank world (collectives are local copies) and argument validation, in this JVM. */
class CommunicatorLocalTest {

    private static Communicator single(LocalGroup g) {
        return Communicator.builder().transport(g.transport(0)).store(g.store(0))
                .options(CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(10))).build();
    }

    @Test
    void oneRankWorld() {
        try (LocalGroup g = LocalGroup.start(1, LocalGroup.config(TransportConfig.Provider.TCP));
             Communicator c = single(g);
             Arena arena = Arena.ofShared()) { // shared: an asynchronous call below uses it
            assertEquals(0, c.rank());
            assertEquals(1, c.size());
            assertEquals(0, c.localRank());
            assertEquals(1, c.localSize());
            // the options left chunk and window to the transport: TCP's shape (one rank does not
            // outnumber the CPUs: the larger chunk), not the verbs one
            assertEquals(CollectiveOptions.TCP_CHUNK_BYTES, c.options().chunkBytes());
            assertEquals(4, c.options().window());
            float[] f = {1, 2, 3};
            c.allReduce(f, ReduceOp.AVG);
            assertArrayEquals(new float[] {1, 2, 3}, f);
            MemorySegment a = arena.allocate(40);
            MemorySegment b = arena.allocate(40);
            for (int i = 0; i < 10; i++) {
                a.setAtIndex(ValueLayout.JAVA_INT, i, i * 3);
            }
            c.allReduce(a, b, 10, DataType.I32, ReduceOp.SUM);
            assertEquals(-1, a.mismatch(b));
            b.fill((byte) 0);
            c.allGather(a, b, 10, DataType.I32);
            assertEquals(-1, a.mismatch(b));
            b.fill((byte) 0);
            c.reduceScatter(a, b, 10, DataType.I32, ReduceOp.MAX);
            assertEquals(-1, a.mismatch(b));
            c.broadcast(a, 10, DataType.I32, 0);
            c.barrier();
            c.allReduceAsync(a, DataType.I32, ReduceOp.SUM).await(Duration.ofSeconds(5));
            Communicator sub = c.split(3, 0);
            assertEquals(1, sub.size());
            sub.close();
        }
    }

    /**
     * Rank 1 of a world of two never starts: building rank 0's world fails within the transport's
     * timeout (RDMA4J_TIMEOUT_MS), naming rank 1 (the exchange of host identities, the first wait
     * for the others when the provider is named, waited a fixed two minutes).
     */
    @Test
    void aRankThatNeverStartsFailsTheBuildWithinTheTransportTimeout(@TempDir Path dir) {
        TransportConfig oneSecond = TransportConfig.builder().provider(TransportConfig.Provider.TCP)
                .timeout(Duration.ofSeconds(1)).build();
        TransportTimeoutException e = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> assertThrows(
                TransportTimeoutException.class, () -> Communicator.builder().rank(0).size(2)
                        .store(new FileStore(dir)).transportConfig(oneSecond).build()));
        assertEquals(1, e.peer(), e.getMessage());
        assertTrue(e.getMessage().contains("rank 1 did not publish"), e.getMessage());
        assertTrue(e.getMessage().contains("1000 ms"), e.getMessage());
    }

    /**
     * Rank 0 gave up on rank 1 and builds again when rank 1 comes: the two meet. Rank 1 used to
     * take the world rank 0 had given up (each rank numbers its worlds on the store), and the two
     * never paired again: rank 1 read rank 0's stale host identity there and waited to connect to
     * rank 0's closed transport, while rank 0 waited in the next world for rank 1.
     */
    @Test
    void aRankThatComesAfterTheOthersGaveUpMeetsTheirRetry(@TempDir Path dir) throws Exception {
        TransportConfig oneSecond = TransportConfig.builder().provider(TransportConfig.Provider.TCP)
                .timeout(Duration.ofSeconds(1)).build();
        TransportConfig tenSeconds = oneSecond.toBuilder().timeout(Duration.ofSeconds(10)).build();
        assertThrows(TransportTimeoutException.class, () -> Communicator.builder().rank(0).size(2)
                .store(new FileStore(dir)).transportConfig(oneSecond).build());
        java.util.concurrent.ExecutorService ranks = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            java.util.List<java.util.concurrent.Future<Float>> sums = new java.util.ArrayList<>();
            for (int rank : new int[] {1, 0}) { // rank 1 first: it comes to the given-up world before the retry
                sums.add(ranks.submit(() -> {
                    try (Communicator c = Communicator.builder().rank(rank).size(2).store(new FileStore(dir))
                            .transportConfig(tenSeconds).build()) {
                        float[] v = {rank + 1};
                        c.allReduce(v, ReduceOp.SUM);
                        return v[0];
                    }
                }));
                Thread.sleep(200);
            }
            for (java.util.concurrent.Future<Float> sum : sums) {
                assertEquals(3f, sum.get(30, java.util.concurrent.TimeUnit.SECONDS));
            }
        } finally {
            ranks.shutdownNow();
        }
    }

    /**
     * A rank that built a world just as another gave it up (it read the abandoned mark before the
     * other set it) learns it in its first call, at the engine's next look at the fault board,
     * not at the call's timeout: the one that gave up says so on the world's board. Here both
     * ranks built world 2.1 of a fresh store, and rank 0 then gives it up as a failed build does.
     */
    @Test
    void aRankInAWorldAnotherGaveUpLearnsItAtItsFirstCall(@TempDir Path dir) throws Exception {
        TransportConfig tcp = TransportConfig.builder().provider(TransportConfig.Provider.TCP)
                .timeout(Duration.ofSeconds(10)).build();
        CollectiveOptions minute = CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(60));
        java.util.concurrent.ExecutorService ranks = java.util.concurrent.Executors.newFixedThreadPool(2);
        Communicator rank0 = null;
        try {
            java.util.List<java.util.concurrent.Future<Communicator>> built = new java.util.ArrayList<>();
            for (int rank : new int[] {0, 1}) {
                built.add(ranks.submit(() -> Communicator.builder().rank(rank).size(2).store(new FileStore(dir))
                        .transportConfig(tcp).options(minute).build()));
            }
            rank0 = built.get(0).get(30, java.util.concurrent.TimeUnit.SECONDS);
            try (Communicator rank1 = built.get(1).get(30, java.util.concurrent.TimeUnit.SECONDS)) {
                Bootstrap.abandon(new FileStore(dir), "2.1", 0, new TransportTimeoutException(1, "rank 1 came late"));
                CollectiveException e = assertTimeoutPreemptively(Duration.ofSeconds(20),
                        () -> assertThrows(CollectiveException.class, () -> rank1.allReduce(new float[] {1}, ReduceOp.SUM)));
                assertTrue(e.getMessage().contains("rank 0 gave up building this world"), e.getMessage());
                assertTrue(e.getMessage().contains("rank 1 came late"), e.getMessage());
                assertEquals(0, e.failedRank(), e.getMessage());
            }
        } finally {
            if (rank0 != null) {
                rank0.close();
            }
            ranks.shutdownNow();
        }
    }

    @Test
    void badArgumentsAreRejectedClearly() {
        try (LocalGroup g = LocalGroup.start(1, LocalGroup.config(TransportConfig.Provider.TCP));
             Arena arena = Arena.ofConfined()) {
            Communicator c = single(g);
            MemorySegment small = arena.allocate(16);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> c.allReduce(small, small, 5, DataType.F32, ReduceOp.SUM));
            assertTrue(e.getMessage().contains("holds 16 bytes, needs 20"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> c.allReduce(small, small, -1, DataType.F32, ReduceOp.SUM));
            e = assertThrows(IllegalArgumentException.class, () -> c.broadcast(small, 2, DataType.F32, 1));
            assertTrue(e.getMessage().contains("root 1"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> c.allReduce(MemorySegment.ofArray(new byte[6]),
                    DataType.F32, ReduceOp.SUM));
            assertTrue(e.getMessage().contains("whole number"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> c.send(small, 1, DataType.F32, 0));
            // the convenience overloads refuse a null buffer as the segment calls do, not with an NPE
            for (Executable nullData : List.<Executable>of(
                    () -> c.allReduce((float[]) null, ReduceOp.SUM),
                    () -> c.allReduce((short[]) null, DataType.F16, ReduceOp.SUM),
                    () -> c.broadcast((int[]) null, 0),
                    () -> c.allReduce((MemorySegment) null, DataType.F32, ReduceOp.SUM),
                    () -> c.allReduceAsync((MemorySegment) null, DataType.F32, ReduceOp.SUM))) {
                e = assertThrows(IllegalArgumentException.class, nullData);
                assertEquals("data buffer is null", e.getMessage());
            }
            e = assertThrows(IllegalArgumentException.class, () -> c.allReduce(small, null, ReduceOp.SUM));
            assertEquals("data type must not be null", e.getMessage());
            c.allReduce(new float[] {2f}, ReduceOp.SUM); // the communicator is still usable
            c.close();
            c.close(); // idempotent
            IllegalStateException closed = assertThrows(IllegalStateException.class, c::barrier);
            assertTrue(closed.getMessage().contains("closed"));
        }
    }

    @Test
    void closingTheWorldClosesTheSplitsLeftOpenAndEndsTheirProgressThreads() throws InterruptedException {
        try (LocalGroup g = LocalGroup.start(1, LocalGroup.config(TransportConfig.Provider.TCP))) {
            Communicator world = single(g);
            Communicator sub = world.split(0, 0);
            float[] f = {1, 2};
            sub.allReduceAsync(MemorySegment.ofArray(f), DataType.F32, ReduceOp.SUM).await(Duration.ofSeconds(5));
            Thread progress = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.threadId() == sub.progressThreadId()).findFirst().orElseThrow();
            assertInstanceOf(Engine.Background.class, progress,
                    "the engine idles a progress thread with its background strategy");
            world.close(); // the split is never closed by the program
            progress.join(Duration.ofSeconds(10));
            assertFalse(progress.isAlive(), "the split's progress thread outlived its world");
            IllegalStateException closed = assertThrows(IllegalStateException.class, sub::barrier);
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
            sub.close(); // still fine afterwards
        }
    }

    @Test
    void environmentContract() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Communicator.fromEnvironment(Map.of("WORLD_SIZE", "2")));
        assertTrue(e.getMessage().contains("RANK, OMPI_COMM_WORLD_RANK, PMI_RANK"), e.getMessage());
        assertEquals(3, EnvContract.rank(Map.of("OMPI_COMM_WORLD_RANK", "3")));
        assertEquals(5, EnvContract.size(Map.of("PMI_SIZE", "5")));
        assertEquals(1, EnvContract.rank(Map.of("RANK", "1", "PMI_RANK", "4")));
        e = assertThrows(IllegalArgumentException.class,
                () -> Communicator.fromEnvironment(Map.of("RANK", "0", "WORLD_SIZE", "2", "MASTER_PORT", "1")));
        assertTrue(e.getMessage().contains("RDMA4J_JOB_TOKEN"), e.getMessage());
    }
    /**
     * Two open worlds on one transport would share context 0, and two equal calls on them would
     * match across the worlds and mix their data: the second build is refused until the first is
     * closed, and then the transport serves a new world.
     */
    @Test
    void aTransportServesOneOpenWorldAtATime() throws Exception {
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                CommunicatorBuilder builder = Communicator.builder().transport(t)
                        .options(CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(10)));
                try (Communicator first = builder.store(store.scoped("first")).build()) {
                    IllegalStateException refused = assertThrows(IllegalStateException.class,
                            () -> builder.store(store.scoped("second")).build());
                    assertTrue(refused.getMessage().contains("already serves an open world"), refused.getMessage());
                    float[] v = {rank + 1};
                    first.allReduce(v, ReduceOp.SUM);
                    assertEquals(3f, v[0], "the refused build left the first world working");
                }
                try (Communicator next = builder.store(store.scoped("next")).build()) {
                    float[] v = {10 * (rank + 1)};
                    next.allReduce(v, ReduceOp.SUM);
                    assertEquals(30f, v[0]);
                }
            });
        }
    }
}
