package io.rdma4j.transport.testing;

import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.Transports;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.bootstrap.TcpStore;
import io.rdma4j.transport.bootstrap.TcpStoreServer;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A group of ranks inside this JVM, one thread each, for tests: a token-protected
 * {@link TcpStoreServer} on loopback, a {@link TcpStore} client and a transport per rank (created
 * by {@link Transports#create}, so any provider). {@link #run} executes one body per rank in
 * parallel with a bound on the whole; {@link #close()} closes transports, stores and server.
 *
 * <pre>
 * try (LocalGroup g = LocalGroup.start(4, LocalGroup.config(Provider.TCP))) {
 *     g.run(Duration.ofSeconds(20), (rank, transport, store) -> { ... });
 * }
 * </pre>
 */
public final class LocalGroup implements AutoCloseable {

    /** What one rank does. */
    @FunctionalInterface
    public interface RankBody {
        void run(int rank, Transport transport, Store store) throws Exception;
    }

    private final TcpStoreServer server;
    private final List<Store> stores = new ArrayList<>();
    private final List<Transport> transports = new ArrayList<>();
    private final ExecutorService threads;

    private LocalGroup(int size, TransportConfig config) {
        String token = UUID.randomUUID().toString();
        server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), token);
        threads = Executors.newFixedThreadPool(size, r -> {
            Thread t = new Thread(r, "rank-thread");
            t.setDaemon(true);
            return t;
        });
        try {
            for (int r = 0; r < size; r++) {
                stores.add(TcpStore.builder().address("127.0.0.1").port(server.port()).token(token)
                        .timeout(Duration.ofSeconds(20)).build());
            }
            // Created in parallel: a provider may wait in its constructor for the others' descriptors.
            List<Future<Transport>> created = new ArrayList<>();
            for (int r = 0; r < size; r++) {
                int rank = r;
                created.add(threads.submit(() -> Transports.create(config, stores.get(rank), rank, size)));
            }
            for (Future<Transport> f : created) {
                transports.add(f.get(60, TimeUnit.SECONDS));
            }
        } catch (Exception e) {
            close();
            throw new IllegalStateException("could not start a local group of " + size + ": " + e, e);
        }
    }

    /** Starts {@code size} ranks with {@code config}. */
    public static LocalGroup start(int size, TransportConfig config) {
        return new LocalGroup(size, config);
    }

    /** A test configuration for {@code provider}: loopback TCP, 20 s timeout, yield idling. */
    public static TransportConfig config(TransportConfig.Provider provider) {
        return TransportConfig.builder().provider(provider).tcpAddress("127.0.0.1")
                .timeout(Duration.ofSeconds(20)).idleStrategy(io.rdma4j.transport.IdleStrategy.Kind.YIELD).build();
    }

    public int size() {
        return transports.size();
    }

    public Transport transport(int rank) {
        return transports.get(rank);
    }

    public Store store(int rank) {
        return stores.get(rank);
    }

    /** Connects every pair (both sides, in parallel), within {@code timeout}. */
    public void connectAll(Duration timeout) throws Exception {
        run(timeout, (rank, t, s) -> {
            for (int p = 0; p < size(); p++) {
                if (p != rank) {
                    t.connection(p);
                }
            }
        });
    }

    /**
     * Runs {@code body} for every rank in parallel and waits for all of them; the first failure
     * is rethrown (after aborting the other ranks so none stays blocked), with the rank named.
     */
    public void run(Duration timeout, RankBody body) throws Exception {
        List<Future<?>> futures = new ArrayList<>();
        for (int r = 0; r < size(); r++) {
            int rank = r;
            futures.add(threads.submit(() -> {
                body.run(rank, transports.get(rank), stores.get(rank));
                return null;
            }));
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        Exception first = null;
        for (int r = 0; r < futures.size(); r++) {
            Exception failure = null;
            try {
                futures.get(r).get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (ExecutionException e) {
                failure = new Exception("rank " + r + " failed: " + e.getCause(), e.getCause());
            } catch (TimeoutException e) {
                failure = new TimeoutException("rank " + r + " did not finish within " + timeout.toMillis() + " ms");
            }
            if (failure != null) {
                if (first == null) {
                    first = failure;
                    abortAll(failure);
                } else {
                    first.addSuppressed(failure);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    private void abortAll(Throwable cause) {
        for (Transport t : transports) {
            t.abort(cause);
        }
    }

    @Override
    public void close() {
        for (Transport t : transports) {
            t.close();
        }
        for (Store s : stores) {
            s.close();
        }
        threads.shutdownNow();
        server.close();
    }
}
