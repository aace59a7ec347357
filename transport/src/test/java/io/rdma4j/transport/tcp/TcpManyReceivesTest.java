package io.rdma4j.transport.tcp;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A peer may post as many receives ahead of the sends as its request table holds, not fewer. */
class TcpManyReceivesTest {
    /** More than the 65,536 unmatched clear-to-sends the TCP provider once took for a hostile peer. */
    private static final int RECEIVES = 70_000;

    @Test
    void receivesPostedAheadUpToTheRequestLimitAreAllServed() throws Exception {
        TransportConfig config = LocalGroup.config(TransportConfig.Provider.TCP).toBuilder()
                .maxOutstandingRequests(RECEIVES + 16).build();
        CountDownLatch posted = new CountDownLatch(1);
        try (LocalGroup g = LocalGroup.start(2, config)) {
            g.run(Duration.ofMinutes(2), (rank, t, store) -> {
                Connection c = t.connection(1 - rank);
                try (RegisteredBuffer b = t.allocate(8)) {
                    long[] ids = new long[RECEIVES];
                    if (rank == 1) {
                        for (int i = 0; i < RECEIVES; i++) {
                            ids[i] = c.irecv(b, 0, 0, 3);
                        }
                        c.flush();
                        posted.countDown();
                        // behind every clear-to-send on the one ordered socket: rank 0 takes them all in first
                        t.await(c.isend(b, 0, 0, 4), TimeUnit.MINUTES.toNanos(1));
                    } else {
                        assertTrue(posted.await(1, TimeUnit.MINUTES));
                        // progress, taking in every clear-to-send, before the first send
                        long done = t.await(c.irecv(b, 0, 0, 4), TimeUnit.MINUTES.toNanos(1));
                        assertEquals(0, done);
                        for (int i = 0; i < RECEIVES; i++) {
                            ids[i] = c.isend(b, 0, 0, 3);
                        }
                    }
                    for (long id : ids) {
                        assertEquals(0, t.await(id, TimeUnit.MINUTES.toNanos(1)));
                    }
                }
            });
        }
    }
}
