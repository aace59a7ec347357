package io.rdma4j.collectives;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Buffers a call cannot use are refused on the rank that passed them, before the call takes its
 * sequence number: that rank gets the exception, the others never see the call, and the next
 * call of both sides (checked here) still pairs up.
 */
class BufferChecksTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final int N = 1000;

    @Test
    void sendAndReceiveThatOverlapOtherThanInPlaceAreRefused() throws Exception {
        LocalWorld.tcp(2, TIMEOUT, (rank, c) -> {
            try (Arena arena = Arena.ofShared()) {
                if (rank == 1) {
                    MemorySegment seg = arena.allocate(4L * (N + 1));
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                            () -> c.allReduce(seg.asSlice(0, 4L * N), seg.asSlice(4, 4L * N), N, DataType.F32,
                                    ReduceOp.SUM));
                    assertTrue(e.getMessage().contains("overlaps the send buffer at byte 4"), e.getMessage());
                    MemorySegment heap = MemorySegment.ofArray(new float[N + 1]);
                    assertThrows(IllegalArgumentException.class, () -> c.reduce(heap.asSlice(4, 4L * N),
                            heap.asSlice(0, 4L * N), N, DataType.F32, ReduceOp.SUM, 1));
                }
                assertNextAllReducePairsUp(c, arena);
            }
        });
    }

    /**
     * In place, reduce-scatter's receive is block {@code rank} of its send: the same segment is
     * that layout on rank 0 only, and refused on rank 1 (the ring would write its result over a
     * block it still has to send).
     */
    @Test
    void reduceScatterInPlaceReceivesIntoTheRanksOwnBlock() throws Exception {
        LocalWorld.tcp(2, TIMEOUT, (rank, c) -> {
            try (Arena arena = Arena.ofShared()) {
                MemorySegment buf = arena.allocate(4L * 2 * N);
                for (int i = 0; i < 2 * N; i++) {
                    buf.setAtIndex(ValueLayout.JAVA_FLOAT, i, (rank + 1) * (i + 1));
                }
                if (rank == 1) {
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                            () -> c.reduceScatter(buf, buf, N, DataType.F32, ReduceOp.SUM));
                    assertTrue(e.getMessage().contains("starts at byte " + 4 * N), e.getMessage());
                }
                MemorySegment ownBlock = rank == 0 ? buf : buf.asSlice(4L * N * rank, 4L * N); // both layouts in place
                c.reduceScatter(buf, ownBlock, N, DataType.F32, ReduceOp.SUM);
                for (int i = 0; i < N; i++) {
                    int element = rank * N + i;
                    assertEquals(3f * (element + 1), buf.getAtIndex(ValueLayout.JAVA_FLOAT, element), "element " + element);
                }
            }
        });
    }

    @Test
    void aReadOnlyReceiveBufferIsRefused() throws Exception {
        LocalWorld.tcp(2, TIMEOUT, (rank, c) -> {
            try (Arena arena = Arena.ofShared()) {
                if (rank == 1) {
                    MemorySegment out = arena.allocate(4L * N).asReadOnly();
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                            () -> c.allReduce(arena.allocate(4L * N), out, N, DataType.F32, ReduceOp.SUM));
                    assertTrue(e.getMessage().contains("read-only"), e.getMessage());
                    assertThrows(IllegalArgumentException.class, () -> c.broadcast(out, N, DataType.F32, 0));
                    assertThrows(IllegalArgumentException.class, () -> c.recv(out, N, DataType.F32, 0));
                }
                assertNextAllReducePairsUp(c, arena);
            }
        });
    }

    @Test
    void aFreedBufferIsRefused() throws Exception {
        LocalWorld.tcp(2, TIMEOUT, (rank, c) -> {
            try (Arena arena = Arena.ofShared()) {
                if (rank == 1) {
                    MemorySegment freed;
                    try (Arena gone = Arena.ofShared()) {
                        freed = gone.allocate(4L * N);
                    }
                    IllegalStateException e = assertThrows(IllegalStateException.class,
                            () -> c.allReduce(freed, DataType.F32, ReduceOp.SUM));
                    assertTrue(e.getMessage().contains("freed"), e.getMessage());
                }
                assertNextAllReducePairsUp(c, arena);
            }
        });
    }

    /** A read-only view as a send buffer works, and leaves no read-only registration behind for a call that writes. */
    @Test
    void aReadOnlySendLeavesTheMemoryWritableForLaterCalls() throws Exception {
        LocalWorld.tcp(2, TIMEOUT, (rank, c) -> {
            try (Arena arena = Arena.ofShared()) {
                MemorySegment w = filled(arena, rank + 1);
                MemorySegment out = arena.allocate(4L * N);
                c.allReduce(w.asReadOnly(), out, N, DataType.F32, ReduceOp.SUM);
                assertAll(out, 3f);
                c.allReduce(w, DataType.F32, ReduceOp.SUM);
                assertAll(w, 3f);
            }
        });
    }

    /**
     * In place with a read-only view of the receive buffer as send: allReduce works in the
     * receive view; reduceScatter, whose send buffer the receive view does not cover, is refused
     * before it starts, and the next call pairs up.
     */
    @Test
    void inPlaceWithAReadOnlySendViewWritesThroughTheReceiveViewOrIsRefused() throws Exception {
        LocalWorld.tcp(2, TIMEOUT, (rank, c) -> {
            try (Arena arena = Arena.ofShared()) {
                MemorySegment w = filled(arena, rank + 1);
                c.allReduce(w.asReadOnly(), w, N, DataType.F32, ReduceOp.SUM);
                assertAll(w, 3f);
                MemorySegment full = filled(arena, 1);
                long half = 4L * N / 2;
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.reduceScatter(
                        full.asReadOnly(), full.asSlice(half * rank, half), N / 2, DataType.F32, ReduceOp.SUM));
                assertTrue(e.getMessage().contains("read-only"), e.getMessage());
                assertNextAllReducePairsUp(c, arena);
            }
        });
    }

    private static void assertNextAllReducePairsUp(Communicator c, Arena arena) {
        MemorySegment data = filled(arena, c.rank() + 1);
        c.allReduce(data, DataType.F32, ReduceOp.SUM);
        assertAll(data, 3f);
    }

    private static MemorySegment filled(Arena arena, float value) {
        MemorySegment s = arena.allocate(4L * N);
        for (int i = 0; i < N; i++) {
            s.setAtIndex(ValueLayout.JAVA_FLOAT, i, value);
        }
        return s;
    }

    private static void assertAll(MemorySegment s, float expected) {
        for (int i = 0; i < N; i++) {
            assertEquals(expected, s.getAtIndex(ValueLayout.JAVA_FLOAT, i), "element " + i);
        }
    }
}
