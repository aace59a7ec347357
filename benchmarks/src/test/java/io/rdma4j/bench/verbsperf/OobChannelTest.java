package io.rdma4j.bench.verbsperf;

import io.rdma4j.verbs.Gid;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The out-of-band exchange over loopback TCP. */
class OobChannelTest {
    private static final Gid GID = new Gid(new byte[]{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, (byte) 198, 18, 0, 1});

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static PeerInfo info(int qpn, Gid gid, String fingerprint) {
        return new PeerInfo(0, qpn, 0x123456, gid, 0x222, 0x7f0000001000L, 1024, fingerprint);
    }

    @Test
    void exchangeBarrierAndValues() throws Exception {
        int port = freePort();
        CompletableFuture<PeerInfo> server = CompletableFuture.supplyAsync(() -> {
            try (OobChannel c = OobChannel.accept(port, 10)) {
                PeerInfo theirs = c.exchange(info(17, GID, "write_bw sizes=64 iters=10 warmup=0"));
                c.barrier("step 1");
                c.sendValues(c.receiveValues("values"));
                return theirs;
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        // the client may start first: it retries until the server listens
        try (OobChannel c = OobChannel.connect("127.0.0.1", port, 10, System.err)) {
            PeerInfo theirs = c.exchange(info(18, null, "write_bw sizes=64 iters=10 warmup=0"));
            assertEquals(17, theirs.qpn());
            assertArrayEquals(GID.raw(), theirs.gid().raw());
            assertEquals(0x7f0000001000L, theirs.vaddr());
            assertEquals(0x222, theirs.rkey());
            assertEquals(1024, theirs.mtuBytes());
            c.barrier("step 1");
            c.sendValues(1.5, 2, 3);
            assertArrayEquals(new double[]{1.5, 2, 3}, c.receiveValues("echo"));
        }
        PeerInfo seenByServer = server.get(10, TimeUnit.SECONDS);
        assertEquals(18, seenByServer.qpn());
        assertNull(seenByServer.gid(), "a LID-addressed side sends no GID");
    }

    @Test
    void differentTestOptionsFailAtTheExchange() throws Exception {
        int port = freePort();
        CompletableFuture<Void> server = CompletableFuture.runAsync(() -> {
            try (OobChannel c = OobChannel.accept(port, 10)) {
                c.exchange(info(1, GID, "send_lat sizes=2 iters=1000 warmup=0"));
            } catch (IOException expected) {
                // the server sees the same mismatch
            }
        });
        try (OobChannel c = OobChannel.connect("127.0.0.1", port, 10, System.err)) {
            IOException e = assertThrows(IOException.class, () -> c.exchange(info(2, GID,
                    "send_lat sizes=64 iters=1000 warmup=0")));
            assertTrue(e.getMessage().contains("same test options"), e.getMessage());
        }
        server.get(10, TimeUnit.SECONDS);
    }

    @Test
    void aSilentPeerTimesOutNamingWhatWasAwaited() throws Exception {
        int port = freePort();
        CompletableFuture<OobChannel> server = CompletableFuture.supplyAsync(() -> {
            try {
                return OobChannel.accept(port, 10);
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        try (OobChannel c = OobChannel.connect("127.0.0.1", port, 1, System.err); OobChannel s = server.get(10, TimeUnit.SECONDS)) {
            long t0 = System.nanoTime();
            IOException e = assertThrows(IOException.class, () -> c.barrier("size 64"));
            assertTrue(e.getMessage().contains("'size 64'") && e.getMessage().contains("timed out after 1 s"),
                    e.getMessage());
            assertTrue(System.nanoTime() - t0 < 5_000_000_000L);
            assertTrue(s.peer().contains("127.0.0.1"));
        }
    }

    @Test
    void noServerFailsWithinTheTimeout() throws Exception {
        int port = freePort();
        long t0 = System.nanoTime();
        ByteArrayOutputStream notices = new ByteArrayOutputStream();
        IOException e = assertThrows(IOException.class, () -> OobChannel.connect("127.0.0.1", port, 1,
                new PrintStream(notices, true, StandardCharsets.UTF_8)));
        assertTrue(e.getMessage().contains("no verbs-perf server listening on 127.0.0.1:" + port), e.getMessage());
        assertTrue(System.nanoTime() - t0 < 5_000_000_000L);
        String told = notices.toString(StandardCharsets.UTF_8);
        assertTrue(told.startsWith("verbs-perf: no server on 127.0.0.1:" + port + " yet"), told);
        assertEquals(1, told.lines().count(), "told once, not per retry: " + told);
    }

    @Test
    void aPeerThatIsNotVerbsPerfIsNamed() throws Exception {
        int port = freePort();
        CompletableFuture<Void> notUs = CompletableFuture.runAsync(() -> {
            try (ServerSocket ss = new ServerSocket(port); var s = ss.accept()) {
                s.getOutputStream().write("0000:000000:000000:00000000:0000000000000000".getBytes());
                s.getOutputStream().flush();
                s.getInputStream().read();
            } catch (IOException ignored) {
                // the client hangs up after reading the greeting
            }
        });
        try (OobChannel c = OobChannel.connect("127.0.0.1", port, 10, System.err)) {
            IOException e = assertThrows(IOException.class, () -> c.exchange(info(1, GID, "x")));
            assertTrue(e.getMessage().contains("not a verbs-perf peer"), e.getMessage());
        }
        notUs.get(10, TimeUnit.SECONDS);
    }

    @Test
    void addressLinesLookLikePerftests() {
        String s = info(0x11, GID, "x").describe("local");
        assertTrue(s.startsWith(" local address: LID 0000 QPN 0x0011 PSN 0x123456 RKey 0x000222 VAddr 0x007f0000001000"), s);
        assertTrue(s.endsWith(" GID: 00:00:00:00:00:00:00:00:00:00:255:255:198:18:00:01"), s);
    }
}
