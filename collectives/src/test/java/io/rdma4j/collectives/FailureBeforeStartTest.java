package io.rdma4j.collectives;

import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportException;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A call that fails on one rank after it took its sequence number, before the collective
 * itself ran (here: memory its transport refuses to register), fails the other ranks at once,
 * naming that rank, instead of leaving them to the timeout.
 */
class FailureBeforeStartTest {
    /** The size of the buffer rank 1's transport refuses to register. */
    private static final long REFUSED_BYTES = 4 * 1000 + 4;

    @Test
    void aRankWhoseCallFailsBeforeItStartsFailsTheOthersNamingItself() throws Exception {
        LocalWorld.run(TransportConfig.Provider.TCP, 2, Duration.ofSeconds(20),
                (rank, t) -> rank == 1 ? refusingRegistration(t, false) : t, (rank, c) -> {
            try (Arena arena = Arena.ofShared()) {
                long start = System.nanoTime();
                CollectiveException e;
                if (rank == 1) {
                    MemorySegment refused = arena.allocate(REFUSED_BYTES);
                    e = assertThrows(CollectiveException.class, () -> c.allReduce(refused, arena.allocate(4000), 1000,
                            DataType.F32, ReduceOp.SUM, Algorithm.RING));
                    assertTrue(e.getMessage().contains("cannot register"), e.getMessage());
                    // broken here too: no later call runs one number ahead of the others
                    assertThrows(CollectiveException.class, c::barrier);
                } else {
                    e = assertThrows(CollectiveException.class, () -> c.allReduce(arena.allocate(4000),
                            arena.allocate(4000), 1000, DataType.F32, ReduceOp.SUM, Algorithm.RING));
                    long ms = (System.nanoTime() - start) / 1_000_000;
                    assertTrue(ms < 10_000, "rank 0 waited " + ms + " ms: " + e);
                }
                assertEquals(1, e.failedRank(), e.toString());
            }
        });
    }

    /**
     * The same with an {@link Error} (the JVM out of memory while it registers or stages): the
     * caller gets the error itself, and the communicator is broken and the others told as above.
     */
    @Test
    void anErrorBeforeTheStartBreaksTheCommunicatorAndTellsTheOthers() throws Exception {
        LocalWorld.run(TransportConfig.Provider.TCP, 2, Duration.ofSeconds(20),
                (rank, t) -> rank == 1 ? refusingRegistration(t, true) : t, (rank, c) -> {
            try (Arena arena = Arena.ofShared()) {
                long start = System.nanoTime();
                if (rank == 1) {
                    MemorySegment refused = arena.allocate(REFUSED_BYTES);
                    OutOfMemoryError e = assertThrows(OutOfMemoryError.class, () -> c.allReduce(refused,
                            arena.allocate(4000), 1000, DataType.F32, ReduceOp.SUM, Algorithm.RING));
                    assertTrue(e.getMessage().contains("(test)"), e.getMessage());
                    CollectiveException broken = assertThrows(CollectiveException.class, c::barrier);
                    assertEquals(1, broken.failedRank(), broken.toString());
                } else {
                    CollectiveException e = assertThrows(CollectiveException.class, () -> c.allReduce(
                            arena.allocate(4000), arena.allocate(4000), 1000, DataType.F32, ReduceOp.SUM, Algorithm.RING));
                    long ms = (System.nanoTime() - start) / 1_000_000;
                    assertTrue(ms < 10_000, "rank 0 waited " + ms + " ms: " + e);
                    assertEquals(1, e.failedRank(), e.toString());
                }
            }
        });
    }

    /**
     * A transport that cannot register memory of {@link #REFUSED_BYTES}, as one short of pinnable
     * memory, or ({@code error}) whose JVM runs out of memory there.
     */
    private static Transport refusingRegistration(Transport t, boolean error) {
        return new FaultyTransport(t) {
            @Override
            void beforeRegister(MemorySegment segment) {
                if (segment.byteSize() == REFUSED_BYTES) {
                    if (error) {
                        throw new OutOfMemoryError("no memory for " + segment.byteSize() + " bytes (test)");
                    }
                    throw new TransportException(t.rank(), "cannot register " + segment.byteSize() + " bytes (test)");
                }
            }
        };
    }
}
