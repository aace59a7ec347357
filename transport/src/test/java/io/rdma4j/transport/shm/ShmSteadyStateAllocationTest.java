package io.rdma4j.transport.shm;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.Transport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.management.ManagementFactory;
import java.time.Duration;

import static io.rdma4j.transport.shm.ShmTestGroup.TIMEOUT_NANOS;
import static io.rdma4j.transport.shm.ShmTestGroup.runRanks;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The request path allocates nothing once warm: both ranks' threads run many rounds of every
 * operation and the bytes their threads allocated over the measured rounds must stay below one
 * byte per operation (a single allocated object per operation would be at least 16).
 */
class ShmSteadyStateAllocationTest {
    private static final int WARMUP = 20_000;
    private static final int MEASURED = 20_000;
    private static final int OPS_PER_ROUND = 7;
    private static final int BYTES = 16 << 10;
    private static final int LARGE = 12 << 10;

    private final ShmTestGroup group = new ShmTestGroup();

    @AfterEach
    void cleanUp() {
        group.close();
    }

    @Test
    void everyOperationIsAllocationFreeOnceWarm() throws Exception {
        ShmTransport[] t = {group.transport(0, 2), group.transport(1, 2)};
        long[] allocated = new long[2];
        runRanks(2, rank -> {
            Transport me = t[rank];
            Connection c = me.connection(1 - rank);
            try (Arena arena = Arena.ofConfined()) {
                RegisteredBuffer shared = me.allocate(BYTES);
                group.store.set("window" + rank, shared.remote().toBytes());
                RemoteBuffer theirs = RemoteBuffer.fromBytes(group.store.get("window" + (1 - rank), Duration.ofSeconds(30)));
                RegisteredBuffer priv = me.register(arena.allocate(BYTES));
                long before = 0;
                for (int i = 0; i < WARMUP + MEASURED; i++) {
                    if (i == WARMUP) {
                        before = threadAllocatedBytes();
                    }
                    round(me, c, rank, shared, me.register(priv.segment()), theirs);
                }
                allocated[rank] = threadAllocatedBytes() - before;
            }
        });
        for (int r = 0; r < 2; r++) {
            double perOp = allocated[r] / (double) (MEASURED * OPS_PER_ROUND);
            assertTrue(perOp < 1.0, "rank " + r + " allocated " + allocated[r] + " bytes in "
                    + MEASURED * OPS_PER_ROUND + " operations (" + perOp + " B/op)");
        }
        t[0].close();
        t[1].close();
    }

    /**
     * Rank 0 sends into shared then private memory, writes with an immediate, reads, and sends a
     * small message into private memory and a smaller one (eager, as is the empty one rank 1
     * sends); rank 1 mirrors. The first two sends and the read are
     * larger than BulkCopy's threshold (8 KiB), so their copies go through memmove.
     */
    private static void round(Transport me, Connection c, int rank, RegisteredBuffer shared, RegisteredBuffer priv,
                              RemoteBuffer theirs) {
        if (rank == 0) {
            assertEquals(BYTES, me.await(c.isend(priv, 0, BYTES, 1), TIMEOUT_NANOS));
            assertEquals(LARGE, me.await(c.isend(shared, 0, LARGE, 2), TIMEOUT_NANOS));
            assertEquals(64, me.await(c.write(shared, 0, theirs, 0, 64, 7), TIMEOUT_NANOS));
            assertEquals(LARGE, me.await(c.read(priv, 0, theirs, 64, LARGE), TIMEOUT_NANOS));
            assertEquals(0, me.await(c.irecv(shared, 0, 0, 3), TIMEOUT_NANOS));
            assertEquals(100, me.await(c.isend(shared, 0, 100, 4), TIMEOUT_NANOS));
            assertEquals(24, me.await(c.isend(shared, 0, 24, 5), TIMEOUT_NANOS));
        } else {
            assertEquals(BYTES, me.await(c.irecv(shared, 0, BYTES, 1), TIMEOUT_NANOS));
            assertEquals(LARGE, me.await(c.irecv(priv, 0, LARGE, 2), TIMEOUT_NANOS));
            assertEquals(7, ShmTransportTest.waitImmediate(c));
            assertEquals(0, me.await(c.isend(shared, 0, 0, 3), TIMEOUT_NANOS));
            assertEquals(100, me.await(c.irecv(priv, 0, 100, 4), TIMEOUT_NANOS));
            assertEquals(24, me.await(c.irecv(priv, 0, 24, 5), TIMEOUT_NANOS));
        }
    }

    private static long threadAllocatedBytes() {
        return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean()).getCurrentThreadAllocatedBytes();
    }
}
