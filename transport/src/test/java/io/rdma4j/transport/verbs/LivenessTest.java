package io.rdma4j.transport.verbs;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The liveness sockets beside verbs connections, on loopback: no RDMA device needed. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class LivenessTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

    @Test
    void aWatchSeesThePeerOnlyOnceItsListenerSideCloses() throws Exception {
        Liveness peer = Liveness.listen(LOOPBACK, 2);
        assertNotEquals(0, peer.port());
        try (Liveness.Watch watch = Liveness.watch(1, peer.host(), peer.port())) {
            assertNotNull(watch);
            peer.acceptPending();
            for (int i = 0; i < 20; i++) {
                assertFalse(watch.peerGone(), "a live peer reported gone");
                Thread.sleep(5);
            }
            peer.close();
            assertTrue(goneWithin(watch, 5_000), "the peer's close was not seen within 5 s");
        }
    }

    @Test
    void aWatchReadsWhatThePeerSaidAsItClosed() throws Exception {
        int[][] cases = {{Liveness.CLOSED_CLEANLY, -1, 1}, {3, 3, 0}, {Liveness.NOTHING_SAID, -1, 0}};
        for (int[] c : cases) {
            Liveness peer = Liveness.listen(LOOPBACK, 2);
            try (Liveness.Watch watch = Liveness.watch(1, peer.host(), peer.port())) {
                assertNotNull(watch);
                peer.acceptPending();
                peer.close(c[0]);
                assertTrue(goneWithin(watch, 5_000), "the peer's close was not seen within 5 s");
                assertEquals(c[1], watch.lostFirst(), "lost rank after the peer said " + c[0]);
                assertEquals(c[2] == 1, watch.closedCleanly(), "clean close after the peer said " + c[0]);
            }
        }
    }

    @Test
    void aConnectionTheOwnerNeverAcceptedClosesWithTheListener() throws Exception {
        Liveness peer = Liveness.listen(LOOPBACK, 2);
        try (Liveness.Watch watch = Liveness.watch(1, peer.host(), peer.port())) {
            assertNotNull(watch);
            assertFalse(watch.peerGone());
            peer.close();
            assertTrue(goneWithin(watch, 5_000), "a backlogged connection outlived its listener");
        }
    }

    @Test
    void noListenerMeansNoWatch() throws IOException {
        assertNull(Liveness.watch(1, new byte[0], 0));
        int unused;
        try (ServerSocketChannel probe = ServerSocketChannel.open()) {
            probe.bind(new InetSocketAddress(LOOPBACK, 0));
            unused = ((InetSocketAddress) probe.getLocalAddress()).getPort();
        }
        assertNull(Liveness.watch(1, LOOPBACK.getAddress(), unused), "a refused connection must give no watch");
    }

    @Test
    void aListenerThatCannotBindLeavesDetectionToTheQueuePairs() throws Exception {
        // 192.0.2.1 (TEST-NET-1) is on no interface of this host, so binding to it fails
        Liveness none = Liveness.listen(InetAddress.getByName("192.0.2.1"), 2);
        assertEquals(0, none.port());
        assertEquals(0, none.host().length);
        none.acceptPending();
        none.close();
    }

    private static boolean goneWithin(Liveness.Watch watch, long millis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (System.nanoTime() - deadline < 0) {
            if (watch.peerGone()) {
                return true;
            }
            Thread.sleep(2);
        }
        return false;
    }
}
