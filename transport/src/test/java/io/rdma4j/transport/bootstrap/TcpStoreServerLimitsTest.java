package io.rdma4j.transport.bootstrap;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import org.junit.jupiter.api.Test;

import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a peer can send the store server: idle connections beyond the cap, malformed, truncated
 * and oversized requests after the token, and random frames (property-based) before and after
 * it. The server answers or disconnects, never crashes, and keeps serving the job.
 */
class TcpStoreServerLimitsTest {
    private static final String TOKEN = "limits-test-token";
    private static TcpStoreServer shared;

    /** One server for the properties' tries (each try opens its own connection). */
    private static synchronized TcpStoreServer shared() {
        if (shared == null) {
            shared = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), TOKEN);
        }
        return shared;
    }

    @AfterContainer
    static synchronized void closeShared() {
        if (shared != null) {
            shared.close();
            shared = null;
        }
    }

    /** A socket speaking the store's frames by hand. */
    private static final class RawClient implements AutoCloseable {
        final Socket socket;
        final DataInputStream in;
        final DataOutputStream out;

        RawClient(int port, boolean login) throws IOException {
            socket = new Socket("127.0.0.1", port);
            socket.setSoTimeout(10_000);
            socket.setTcpNoDelay(true);
            in = new DataInputStream(socket.getInputStream());
            out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream())); // one segment per frame
            if (login) {
                byte[] ok = request(frame(b -> {
                    b.writeByte(StoreProtocol.HELLO);
                    b.writeInt(StoreProtocol.MAGIC);
                    b.writeInt(StoreProtocol.VERSION);
                    StoreProtocol.writeBytes(b, TOKEN.getBytes(StandardCharsets.UTF_8));
                }));
                assertEquals(StoreProtocol.OK, ok[0], "login refused");
            }
        }

        byte[] request(byte[] frame) throws IOException {
            StoreProtocol.writeFrame(out, frame);
            return StoreProtocol.readFrame(in, StoreProtocol.MAX_FRAME);
        }

        /** Whether the server closed this connection (end of stream within the socket timeout). */
        boolean closedByServer() {
            try {
                return in.read() < 0;
            } catch (IOException reset) {
                return true;
            }
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    private interface FrameBody {
        void write(DataOutputStream b) throws IOException;
    }

    private static byte[] frame(FrameBody body) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        body.write(new DataOutputStream(bytes));
        return bytes.toByteArray();
    }

    private static String text(byte[] response) {
        return new String(response, 1, response.length - 1, StandardCharsets.UTF_8);
    }

    private static void assertError(byte[] response, String contains) {
        assertEquals(StoreProtocol.ERROR, response[0], "error response expected");
        assertTrue(text(response).contains(contains), text(response));
    }

    /** A valid SET then GET on {@code c}: the connection still works. */
    private static void assertUsable(RawClient c, String key) throws IOException {
        byte[] set = c.request(frame(b -> {
            b.writeByte(StoreProtocol.SET);
            StoreProtocol.writeString(b, key);
            StoreProtocol.writeBytes(b, new byte[] {7, 8});
        }));
        assertEquals(StoreProtocol.OK, set[0], text(set));
        byte[] get = c.request(frame(b -> {
            b.writeByte(StoreProtocol.GET);
            StoreProtocol.writeString(b, key);
            b.writeLong(1000);
        }));
        assertEquals(StoreProtocol.OK, get[0]);
        assertArrayEquals(new byte[] {0, 0, 0, 2, 7, 8}, java.util.Arrays.copyOfRange(get, 1, get.length));
    }

    /**
     * A hello that trickles in, a byte every 500 ms (each read well within the per-read timeout),
     * is cut off when the handshake's one deadline passes, not when the 4,000-byte frame is whole.
     */
    @Test
    void aHelloThatTricklesInIsCutOffAtTheHandshakeDeadline() throws Exception {
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), TOKEN);
             RawClient c = new RawClient(server.port(), false)) {
            long start = System.nanoTime();
            Thread trickle = Thread.ofVirtual().start(() -> {
                try {
                    c.out.writeInt(4000);
                    c.out.flush();
                    for (int i = 0; i < 4000; i++) {
                        Thread.sleep(500);
                        c.out.write(1);
                        c.out.flush();
                    }
                } catch (IOException | InterruptedException closed) {
                    // the server cut it off (or the test ended)
                }
            });
            try {
                assertError(StoreProtocol.readFrame(c.in, StoreProtocol.MAX_FRAME), "bad handshake");
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                assertTrue(ms < TcpStoreServer.HELLO_TIMEOUT_MS + 2_000, "cut off after " + ms + " ms");
                assertTrue(c.closedByServer());
            } finally {
                trickle.interrupt();
            }
        }
    }

    @Test
    void malformedRequestsAfterTheTokenAreAnsweredAndTheConnectionGoesOn() throws Exception {
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), TOKEN);
             RawClient c = new RawClient(server.port(), true)) {
            assertError(c.request(frame(b -> {
                b.writeByte(77);
                StoreProtocol.writeString(b, "k");
            })), "unknown store operation 77");
            assertError(c.request(frame(b -> { // a value said to be 1000 bytes, 3 sent
                b.writeByte(StoreProtocol.SET);
                StoreProtocol.writeString(b, "k");
                b.writeInt(1000);
                b.write(new byte[3]);
            })), "malformed store request");
            assertError(c.request(frame(b -> {
                b.writeByte(StoreProtocol.GET);
                StoreProtocol.writeString(b, "k");
                b.writeLong(1);
                b.writeInt(42);
            })), "4 unexpected bytes after the request");
            assertError(c.request(frame(b -> {
                b.writeByte(StoreProtocol.DELETE);
                b.writeInt(StoreProtocol.MAX_KEY_BYTES + 1);
            })), "limit " + StoreProtocol.MAX_KEY_BYTES);
            assertError(c.request(frame(b -> b.writeByte(StoreProtocol.ADD))), "malformed store request");
            assertUsable(c, "after-garbage");
        }
    }

    @Test
    void anOversizedFrameIsAnsweredAndClosedAndATruncatedOneOnlyDropsItsConnection() throws Exception {
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), TOKEN)) {
            try (RawClient c = new RawClient(server.port(), true)) {
                c.out.writeInt(StoreProtocol.MAX_FRAME + 1);
                c.out.flush();
                assertError(StoreProtocol.readFrame(c.in, StoreProtocol.MAX_FRAME), "limit " + StoreProtocol.MAX_FRAME);
                assertTrue(c.closedByServer());
            }
            try (RawClient c = new RawClient(server.port(), true)) {
                c.out.writeInt(100);
                c.out.write(new byte[10]);
                c.socket.shutdownOutput(); // 90 bytes never come
                assertTrue(c.closedByServer());
            }
            try (RawClient c = new RawClient(server.port(), true)) {
                assertUsable(c, "after-truncated");
            }
        }
    }

    /**
     * 2,000 connections that never present a token arrive while four ranks bootstrap through
     * the store: the ranks still exchange their keys, and the server never holds more than its
     * cap of tokenless connections (the oldest are closed).
     */
    @Test
    void aBootstrapCompletesDuringAFloodOfIdleConnections() throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(5); // not the common pool: 1 thread on 2 cores
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), TOKEN)) {
            List<Socket> idle = new ArrayList<>();
            int[] maxWaiting = new int[1];
            CompletableFuture<Void> flood = CompletableFuture.runAsync(() -> {
                try {
                    for (int i = 0; i < 2000; i++) {
                        idle.add(new Socket("127.0.0.1", server.port()));
                        maxWaiting[0] = Math.max(maxWaiting[0], server.unauthenticatedCount());
                    }
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            }, threads);
            int ranks = 4;
            List<CompletableFuture<byte[][]>> bootstrap = new ArrayList<>();
            for (int r = 0; r < ranks; r++) {
                int rank = r;
                bootstrap.add(CompletableFuture.supplyAsync(() -> {
                    try (TcpStore store = TcpStore.builder().address("127.0.0.1").port(server.port()).token(TOKEN)
                            .build()) {
                        store.set("rank/" + rank, new byte[] {(byte) rank});
                        byte[][] seen = new byte[ranks][];
                        for (int p = 0; p < ranks; p++) {
                            seen[p] = store.get("rank/" + p, Duration.ofSeconds(30));
                        }
                        return seen;
                    }
                }, threads));
            }
            for (CompletableFuture<byte[][]> f : bootstrap) {
                byte[][] seen = f.get(60, TimeUnit.SECONDS);
                for (int p = 0; p < ranks; p++) {
                    assertArrayEquals(new byte[] {(byte) p}, seen[p]);
                }
            }
            flood.get(60, TimeUnit.SECONDS);
            assertTrue(maxWaiting[0] <= TcpStoreServer.MAX_UNAUTHENTICATED, "tokenless connections held: " + maxWaiting[0]);
            assertTrue(server.unauthenticatedCount() <= TcpStoreServer.MAX_UNAUTHENTICATED);
            Socket oldest = idle.get(0);
            oldest.setSoTimeout(10_000);
            assertEquals(-1, oldest.getInputStream().read(), "the oldest idle connection was closed by the server");
            for (Socket s : idle) {
                s.close();
            }
        } finally {
            threads.shutdownNow();
        }
    }

    /** Ops the fuzzer uses: every request but GET (whose wait the frame itself sets), and unknown ones. */
    @Provide
    Arbitrary<byte[]> frames() {
        Arbitrary<Byte> op = Arbitraries.of(StoreProtocol.HELLO, StoreProtocol.SET, StoreProtocol.ADD,
                StoreProtocol.DELETE, (byte) 0, (byte) 6, (byte) 127, (byte) -1);
        Arbitrary<byte[]> rest = Arbitraries.bytes().array(byte[].class).ofMaxSize(64);
        return net.jqwik.api.Combinators.combine(op, rest).as((o, r) -> {
            byte[] f = new byte[1 + r.length];
            f[0] = o;
            System.arraycopy(r, 0, f, 1, r.length);
            return f;
        });
    }

    @Property(tries = 300)
    void randomRequestsAfterTheTokenAreAnsweredAndLeaveTheConnectionUsable(@ForAll("frames") byte[] frame)
            throws Exception {
        try (RawClient c = new RawClient(shared().port(), true)) {
            byte[] response = c.request(frame);
            assertTrue(response[0] == StoreProtocol.OK || response[0] == StoreProtocol.ERROR,
                    "response " + response[0]);
            assertUsable(c, "probe");
        }
    }

    @Property(tries = 200)
    void randomBytesInsteadOfTheTokenAreRefused(@ForAll byte[] hello) throws Exception {
        try (RawClient c = new RawClient(shared().port(), false)) {
            c.out.writeInt(hello.length);
            c.out.write(hello);
            c.out.flush();
            int length;
            try {
                length = c.in.readInt();
            } catch (IOException closed) {
                return; // an empty or oversized frame: refused by closing
            }
            byte[] response = new byte[length];
            c.in.readFully(response);
            assertEquals(StoreProtocol.ERROR, response[0], "random bytes were admitted");
            assertTrue(c.closedByServer());
        }
    }
}
