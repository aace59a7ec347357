package io.rdma4j.transport.tcp;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.bootstrap.FileStore;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpTransportLifecycleTest {

    private static long openDescriptors() throws IOException {
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    /** Transports, connections, stores and the store server give back every socket on close. */
    @Test
    void aClosedGroupLeavesNoSocketBehind() throws Exception {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/fd")));
        try (LocalGroup warmup = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            warmup.connectAll(Duration.ofSeconds(20)); // loads classes, opens the JDK's own descriptors
        }
        long before = openDescriptors();
        for (int i = 0; i < 3; i++) {
            try (LocalGroup g = LocalGroup.start(4, LocalGroup.config(TransportConfig.Provider.TCP))) {
                g.connectAll(Duration.ofSeconds(20));
            }
        }
        long after = openDescriptors();
        assertTrue(after <= before + 2, "descriptors: " + before + " before, " + after + " after three 4-rank groups");
    }

    /** A transport whose endpoint cannot be published gives back its listener and selector. */
    @Test
    void aTransportThatCannotPublishItsEndpointLeavesNoSocketBehind() throws Exception {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/fd")));
        Store down = new Store() {
            @Override
            public void set(String key, byte[] value) {
                throw new TransportException(-1, "store down");
            }

            @Override
            public byte[] get(String key, Duration timeout) {
                throw new TransportException(-1, "store down");
            }

            @Override
            public long add(String key, long delta) {
                throw new TransportException(-1, "store down");
            }

            @Override
            public boolean delete(String key) {
                return false;
            }

            @Override
            public void close() {
            }
        };
        TransportConfig config = TransportConfig.builder().tcpAddress("127.0.0.1").build();
        assertThrows(TransportException.class, () -> new TcpTransport(config, down, 0, 2)); // classes loaded
        long before = openDescriptors();
        for (int i = 0; i < 10; i++) {
            assertThrows(TransportException.class, () -> new TcpTransport(config, down, 0, 2));
        }
        long after = openDescriptors();
        assertTrue(after <= before + 2, "descriptors: " + before + " before, " + after + " after 10 failed transports");
    }

    /**
     * Rank 1 lost rank 2, then closes a buffer under a send to rank 0, which fails that
     * connection: rank 0 learns that rank 2 was lost first, as when rank 1's transport closes (a
     * collective's buffers are closed before its transport is), instead of blaming rank 1.
     */
    @Test
    void aConnectionFailedForAClosedBufferNamesTheRankLostFirst() throws Exception {
        try (LocalGroup g = LocalGroup.start(3, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.connectAll(Duration.ofSeconds(20));
            Transport t0 = g.transport(0);
            Transport t1 = g.transport(1);
            try (RegisteredBuffer w = t1.allocate(8); RegisteredBuffer r = t0.allocate(8)) {
                long fromTwo = t1.connection(2).irecv(w, 0, 8, 1);
                long fromOne = t0.connection(1).irecv(r, 0, 8, 2);
                g.transport(2).abort(new RuntimeException("rank 2 goes"));
                assertThrows(TransportException.class, () -> t1.await(fromTwo, Duration.ofSeconds(20).toNanos()));
                RegisteredBuffer big = t1.allocate(1 << 20);
                long pending = t1.connection(0).isend(big, 0, 1 << 20, 3);
                big.close();
                assertThrows(TransportException.class, () -> t1.test(pending));
                TransportException e = assertThrows(TransportException.class,
                        () -> t0.await(fromOne, Duration.ofSeconds(20).toNanos()));
                assertTrue(e.getMessage().contains("rank 1 had lost rank 2 first"), e.getMessage());
            }
        }
    }

    /**
     * A one-sided read whose target is closed while its response is on the way fails, and the
     * response, when it comes, is dropped: the connection goes on (it read as a response to no
     * read, a protocol violation that broke the connection and blamed the peer).
     */
    @Test
    void aReadWhoseTargetIsClosedFailsAndLeavesTheConnectionUsable() throws Exception {
        int bytes = 4 << 20;
        long timeout = Duration.ofSeconds(20).toNanos();
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.connectAll(Duration.ofSeconds(20));
            Transport t0 = g.transport(0);
            Transport t1 = g.transport(1);
            try (RegisteredBuffer source = t1.allocate(bytes); RegisteredBuffer note1 = t1.allocate(8);
                 RegisteredBuffer note0 = t0.allocate(8)) {
                // rank 1 serves the read while it waits for rank 0's note, then answers it
                CompletableFuture<Long> rank1 = CompletableFuture.supplyAsync(() -> {
                    t1.await(t1.connection(0).irecv(note1, 0, 8, 9), timeout);
                    return t1.await(t1.connection(0).isend(note1, 0, 8, 10), timeout);
                });
                RegisteredBuffer target = t0.allocate(bytes);
                long read = t0.connection(1).read(target, 0, source.remote(), 0, bytes);
                t0.test(read); // the request goes out
                target.close();
                TransportException failed = assertThrows(TransportException.class, () -> t0.test(read));
                assertTrue(failed.getMessage().contains("its buffer was closed"), failed.getMessage());
                t0.await(t0.connection(1).isend(note0, 0, 8, 9), timeout);
                // the answer comes after the read's response on the same stream
                assertTrue(t0.await(t0.connection(1).irecv(note0, 0, 8, 10), timeout) == 8);
                assertTrue(rank1.get(20, TimeUnit.SECONDS) == 8);
            }
        }
    }

    /**
     * A receive posted on a registered view of an allocated buffer fails when that buffer is
     * closed, as one on the buffer itself does (the copy into the freed memory threw later, in
     * progress, and the connection broke blaming the peer), and the view is refused from then on.
     */
    @Test
    void aRequestOnAViewOfAClosedBufferFailsWithIt() throws Exception {
        try (LocalGroup g = LocalGroup.start(3, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.connectAll(Duration.ofSeconds(20));
            Transport t1 = g.transport(1);
            RegisteredBuffer big = t1.allocate(1 << 20);
            RegisteredBuffer view = t1.register(big.segment().asSlice(4096, 1 << 16));
            long recv = t1.connection(0).irecv(view, 0, 1 << 16, 4);
            big.close();
            TransportException e = assertThrows(TransportException.class, () -> t1.test(recv));
            assertTrue(e.getMessage().contains("its buffer was closed"), e.getMessage());
            // on a connection the failed receive did not break (an unpaired receive breaks its own)
            IllegalStateException refused = assertThrows(IllegalStateException.class,
                    () -> t1.connection(2).irecv(view, 0, 8, 5));
            assertTrue(refused.getMessage().contains("memory was freed"), refused.getMessage());
        }
    }

    /**
     * A connect that hangs (a peer address whose accept queue is full drops the SYNs) does not
     * hold the transport's lock: abort returns at once and ends the connect.
     */
    @Test
    void aHangingConnectDoesNotHoldUpAbort() throws Exception {
        try (ServerSocket full = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            List<Socket> queued = new ArrayList<>();
            try {
                for (int i = 0; i < 8; i++) { // fill the accept queue: later SYNs are dropped
                    Socket s = new Socket();
                    try {
                        s.connect(full.getLocalSocketAddress(), 200);
                        queued.add(s);
                    } catch (IOException dropped) {
                        s.close();
                        break;
                    }
                }
                FileStore store = new FileStore(Files.createTempDirectory("rdma4j-hanging-connect"));
                store.set(TcpTransport.ENDPOINT_KEY + 1, new TcpEndpoint("127.0.0.1", full.getLocalPort(),
                        new byte[16]).toBytes());
                TransportConfig config = TransportConfig.builder().tcpAddress("127.0.0.1")
                        .timeout(Duration.ofSeconds(20)).build();
                try (TcpTransport t = new TcpTransport(config, store, 0, 2)) {
                    CompletableFuture<Connection> connecting = CompletableFuture.supplyAsync(() -> t.connection(1));
                    Thread.sleep(300);
                    assertTrue(!connecting.isDone(), "the connect should hang: " + connecting);
                    long start = System.nanoTime();
                    t.abort(new RuntimeException("test"));
                    assertTrue(System.nanoTime() - start < Duration.ofSeconds(2).toNanos(), "abort waited for the connect");
                    ExecutionException failed = assertThrows(ExecutionException.class, () -> connecting.get(2, TimeUnit.SECONDS),
                            "the connect ends with the abort");
                    assertTrue(failed.getCause() instanceof TransportException, failed.getCause().toString());
                }
            } finally {
                for (Socket s : queued) {
                    s.close();
                }
            }
        }
    }
}
