package io.rdma4j.transport.bootstrap;

import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.TransportTimeoutException;
import org.junit.jupiter.api.Test;

import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TcpStoreTest extends StoreContractTest {
    private static final String TOKEN = "job-token-for-tests";
    private TcpStoreServer server;

    @Override
    protected Store newClient() {
        if (server == null) {
            server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), TOKEN);
        }
        return client(TOKEN);
    }

    private TcpStore client(String token) {
        return TcpStore.builder().address("127.0.0.1").port(server.port()).token(token).timeout(Duration.ofSeconds(5)).build();
    }

    @Override
    protected void closeStore() {
        if (server != null) {
            server.close();
        }
    }

    @Test
    void aClientWithoutTheJobTokenIsRefusedAndOthersKeepWorking() {
        Store good = client();
        good.set("secret", new byte[] {42});
        StoreAuthenticationException e = assertThrows(StoreAuthenticationException.class, () -> client("wrong-token"));
        assertTrue(e.getMessage().contains("token"), e.getMessage());
        assertArrayEquals(new byte[] {42}, good.get("secret", Duration.ofSeconds(1)));
        assertArrayEquals(new byte[] {42}, client().get("secret", Duration.ofSeconds(1)));
    }

    /**
     * A get that waits lets the client's other threads through between its requests (a set
     * waited for the whole get), and an interrupt of a platform thread ends it, the interrupt kept.
     */
    @Test
    void aWaitingGetLetsOtherThreadsThroughAndEndsOnInterrupt() throws Exception {
        Store s = client();
        java.util.concurrent.atomic.AtomicReference<Throwable> ended = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicBoolean stillInterrupted = new java.util.concurrent.atomic.AtomicBoolean();
        Thread waiter = Thread.ofPlatform().start(() -> {
            try {
                s.get("never", Duration.ofSeconds(30));
            } catch (Throwable t) {
                ended.set(t);
                stillInterrupted.set(Thread.currentThread().isInterrupted());
            }
        });
        Thread.sleep(300);
        long start = System.nanoTime();
        s.set("meanwhile", new byte[] {1});
        long setMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(setMs < 3_000, "the set waited " + setMs + " ms for the get");
        waiter.interrupt();
        waiter.join(5_000);
        assertFalse(waiter.isAlive(), "the interrupted get still waits");
        assertTrue(ended.get() instanceof io.rdma4j.transport.TransportException
                && ended.get().getMessage().contains("interrupted"), String.valueOf(ended.get()));
        assertTrue(stillInterrupted.get());
        assertArrayEquals(new byte[] {1}, s.get("meanwhile", Duration.ofSeconds(1)));
    }

    /** A value over the request limit is refused before it is sent; the client's connection stays usable. */
    @Test
    void aValueTooLargeForARequestIsRefusedAndTheClientStaysUsable() {
        Store s = client();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> s.set("big", new byte[StoreProtocol.MAX_FRAME]));
        assertTrue(e.getMessage().contains("does not fit"), e.getMessage());
        s.set("small", new byte[] {7});
        assertArrayEquals(new byte[] {7}, s.get("small", Duration.ofSeconds(1)));
    }

    @Test
    void aRawSocketThatSendsGarbageIsDisconnected() throws Exception {
        client();
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.getOutputStream().write(new byte[] {0, 0, 0, 5, 9, 9, 9, 9, 9});
            s.setSoTimeout(5000);
            // The server answers with an error frame and closes: reading reaches end of stream.
            byte[] all = s.getInputStream().readAllBytes();
            assertTrue(all.length > 5 && all[4] == StoreProtocol.ERROR, "error frame expected");
        }
    }

    @Test
    void aMissingTokenIsAConfigurationError() {
        newClient();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TcpStore.builder().address("127.0.0.1").port(server.port()).build());
        assertTrue(e.getMessage().contains(TcpStore.ENV_JOB_TOKEN), e.getMessage());
    }

    @Test
    void environmentConfiguresAClientAndRankZeroHostsTheServer() {
        newClient(); // a port that is surely free afterwards is hard to find: host on port 0 via the builder
        try (TcpStore host = TcpStore.builder().fromEnvironment(Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "0",
                "RDMA4J_JOB_TOKEN", "t2", "RANK", "0")).build();
             TcpStore other = TcpStore.builder().fromEnvironment(Map.of("MASTER_ADDR", "127.0.0.1",
                     "MASTER_PORT", Integer.toString(host.port()), "RDMA4J_JOB_TOKEN", "t2", "RANK", "1")).build()) {
            other.set("k", new byte[] {7});
            assertArrayEquals(new byte[] {7}, host.get("k", Duration.ofSeconds(1)));
        }
        assertThrows(IllegalArgumentException.class, () -> TcpStore.builder()
                .fromEnvironment(Map.of("MASTER_PORT", "x", "RDMA4J_JOB_TOKEN", "t")).build());
    }

    @Test
    void connectingToNoServerTimesOutNamingTheAddress() {
        newClient();
        int port = server.port();
        server.close();
        TransportTimeoutException e = assertThrows(TransportTimeoutException.class, () -> TcpStore.builder()
                .address("127.0.0.1").port(port).token(TOKEN).timeout(Duration.ofMillis(300)).build());
        assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
    }

    @Test
    void closingTheServerReleasesEveryThreadAndSocket() throws Exception {
        Store a = client();
        Store b = client();
        Thread waiter = new Thread(() -> {
            try {
                b.get("never", Duration.ofSeconds(20));
            } catch (RuntimeException expected) {
                // the server went away
            }
        });
        waiter.start();
        Thread.sleep(100);
        assertEquals(2, server.clientCount());
        int port = server.port();
        server.close();
        server.close(); // idempotent
        waiter.join(10_000);
        assertFalse(waiter.isAlive(), "a client blocked in get must be released when the server closes");
        assertEquals(0, server.clientCount());
        Set<String> storeThreads = Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                .filter(n -> n.equals("rdma4j-store-acceptor-" + port)).collect(Collectors.toSet());
        assertTrue(storeThreads.isEmpty(), "store threads left: " + storeThreads);
        assertThrows(RuntimeException.class, () -> a.set("k", new byte[1]));
        try (Socket s = new Socket()) {
            assertThrows(java.io.IOException.class, () -> s.connect(new InetSocketAddress("127.0.0.1", port), 1000),
                    "the listening socket is closed");
        }
    }

    /**
     * A request the server does not answer in time (a stalled rank 0) drops the connection: the
     * late answer is never read as the next request's, which connects again and gets its own.
     * The fake server answers the first request of its first connection after the client's 10 s
     * of slack, every later one at once, each with the value of its key.
     */
    @Test
    void aRequestTheServerDidNotAnswerInTimeDropsTheConnectionAndTheNextConnectsAgain() throws Exception {
        try (ServerSocket fake = new ServerSocket(0)) {
            java.util.concurrent.atomic.AtomicInteger connections = new java.util.concurrent.atomic.AtomicInteger();
            Thread server = new Thread(() -> {
                while (true) {
                    Socket accepted;
                    try {
                        accepted = fake.accept();
                    } catch (Exception closed) {
                        return;
                    }
                    boolean first = connections.getAndIncrement() == 0;
                    Thread.ofPlatform().daemon().start(() -> {
                        try (Socket s = accepted) {
                            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
                            DataOutputStream out = new DataOutputStream(s.getOutputStream());
                            in.readFully(new byte[in.readInt()]); // hello
                            out.writeInt(1);
                            out.writeByte(StoreProtocol.OK);
                            out.flush();
                            for (int n = 0; ; n++) {
                                DataInputStream request = new DataInputStream(new ByteArrayInputStream(in.readNBytes(in.readInt())));
                                request.readByte();
                                byte[] key = request.readNBytes(request.readInt());
                                if (first && n == 0) {
                                    Thread.sleep(10_500);
                                }
                                byte[] value = ("value of " + new String(key, StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8);
                                out.writeInt(1 + 4 + value.length);
                                out.writeByte(StoreProtocol.OK);
                                out.writeInt(value.length);
                                out.write(value);
                                out.flush();
                            }
                        } catch (Exception ended) {
                            // the client dropped the connection
                        }
                    });
                }
            });
            server.setDaemon(true);
            server.start();
            try (TcpStore store = TcpStore.builder().address("127.0.0.1").port(fake.getLocalPort()).token(TOKEN)
                    .timeout(Duration.ofSeconds(5)).build()) {
                TransportException late = assertThrows(TransportException.class, () -> store.get("a", Duration.ZERO));
                assertFalse(late instanceof TransportTimeoutException, "not 'key not set yet': " + late);
                assertTrue(late.getMessage().contains("did not answer"), late.getMessage());
                Thread.sleep(1000); // the late answer arrives meanwhile, on the dropped connection
                assertEquals("value of b", new String(store.get("b", Duration.ZERO), StandardCharsets.UTF_8),
                        "the next request connected again and read its own answer");
                assertEquals(2, connections.get());
            }
        }
    }

    /** A request after a drop whose server is gone fails naming both, and the one after tries again. */
    @Test
    void aDroppedClientWhoseServerIsGoneFailsEachRequestAndRecoversWhenItIsBack() throws Exception {
        newClient().close(); // starts the server
        int port = server.port();
        TcpStore store = TcpStore.builder().address("127.0.0.1").port(port).token(TOKEN)
                .timeout(Duration.ofSeconds(5)).build();
        try {
            store.set("k", new byte[] {1});
            server.close();
            assertThrows(TransportException.class, () -> store.get("k", Duration.ZERO)); // the connection breaks
            TransportException gone = assertThrows(TransportException.class, () -> store.get("k", Duration.ZERO));
            assertTrue(gone.getMessage().contains("connecting again failed"), gone.getMessage());
            server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", port), TOKEN);
            store.set("k", new byte[] {2});
            assertArrayEquals(new byte[] {2}, store.get("k", Duration.ZERO));
        } finally {
            store.close();
        }
    }

    @Test
    void closeEndsAGetThatWaitsForAKeyInsteadOfWaitingBehindIt() throws Exception {
        newClient().close(); // starts the server
        TcpStore store = TcpStore.builder().address("127.0.0.1").port(server.port()).token(TOKEN)
                .timeout(Duration.ofSeconds(60)).build();
        java.util.concurrent.CompletableFuture<Throwable> waiter = new java.util.concurrent.CompletableFuture<>();
        Thread getter = Thread.ofPlatform().start(() -> {
            try {
                store.get("never-set", Duration.ofSeconds(60));
                waiter.complete(null);
            } catch (Throwable t) {
                waiter.complete(t);
            }
        });
        Thread.sleep(300); // the get is on the wire, blocking in the server's wait
        long start = System.nanoTime();
        store.close();
        Throwable failure = waiter.get(10, java.util.concurrent.TimeUnit.SECONDS);
        long tookMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(tookMs < 10_000, "close and the get's end took " + tookMs + " ms");
        assertTrue(failure instanceof TransportException && failure.getMessage().contains("closed during get 'never-set'"),
                String.valueOf(failure));
        getter.join(5_000);
        assertThrows(IllegalStateException.class, () -> store.get("never-set", Duration.ZERO));
    }

    /** Blank variables are unset ones, as the rank lookup reads them (wrappers export empty RANK). */
    @Test
    void blankEnvironmentVariablesAreUnset() {
        TcpStore.builder().fromEnvironment(Map.of("RANK", "", "MASTER_PORT", " ", "RDMA4J_TIMEOUT_MS", "",
                "RDMA4J_STORE_SERVER", ""));
    }

    @Test
    void theEnvironmentsTimeoutIsReadAsTheTransportsIs() {
        TcpStore.builder().fromEnvironment(Map.of("RDMA4J_TIMEOUT_MS", "3000000000")); // 35 days: a long, not an int
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TcpStore.builder().fromEnvironment(Map.of("RDMA4J_TIMEOUT_MS", "100000000000000")));
        assertTrue(e.getMessage().contains("RDMA4J_TIMEOUT_MS"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> TcpStore.builder().fromEnvironment(Map.of("MASTER_PORT", "70000")));
        assertTrue(e.getMessage().contains("MASTER_PORT"), e.getMessage());
    }

    /**
     * The server closes a connection during its handshake (as it evicts tokenless connections
     * under a flood): the client connects again, and the new connection serves its requests.
     */
    @Test
    void aHandshakeCutShortIsRetriedOnANewConnectionThatWorks() throws Exception {
        try (ServerSocket fake = new ServerSocket(0)) {
            Thread server = new Thread(() -> {
                try (Socket first = fake.accept()) {
                    new DataInputStream(first.getInputStream()).readInt(); // the hello's length, then gone
                } catch (Exception ended) {
                    return;
                }
                try (Socket s = fake.accept()) {
                    DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
                    DataOutputStream out = new DataOutputStream(s.getOutputStream());
                    while (true) { // the hello, then every request: OK
                        in.readNBytes(in.readInt());
                        out.writeInt(1);
                        out.writeByte(StoreProtocol.OK);
                        out.flush();
                    }
                } catch (Exception ended) {
                    // the client closed
                }
            });
            server.setDaemon(true);
            server.start();
            try (TcpStore store = TcpStore.builder().address("127.0.0.1").port(fake.getLocalPort()).token(TOKEN)
                    .timeout(Duration.ofSeconds(10)).build()) {
                store.set("k", new byte[] {1});
            }
        }
    }
}
