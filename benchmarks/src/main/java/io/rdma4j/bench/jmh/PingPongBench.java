package io.rdma4j.bench.jmh;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.Transports;
import io.rdma4j.transport.bootstrap.FileStore;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Round trip of a two-sided message between two ranks of one provider, in one JVM: the
 * benchmark thread is rank 0 (send, then wait for the echo), a background thread is rank 1
 * (echo every message). Measures the provider's request path and progress engine without
 * process scheduling noise; {@code -prof gc} must show ~0 B/op (no allocation per request).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class PingPongBench {
    private static final int TAG = 7;
    private static final long TIMEOUT = TimeUnit.SECONDS.toNanos(30);

    @Param({"shm", "tcp"})
    public String provider;
    @Param({"8", "65536"})
    public int bytes;

    private Path dir;
    private FileStore store;
    private Transport[] ranks;
    private Connection toPeer;
    private RegisteredBuffer buf;
    private Thread echo;
    private volatile boolean stopping;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        dir = Files.createTempDirectory("rdma4j-jmh-pingpong");
        store = new FileStore(dir);
        // idle strategy etc. from RDMA4J_* (default backoff: busy-spinning two threads on a small,
        // shared machine starves the peer it waits for)
        TransportConfig config = TransportConfig.builder().fromEnvironment()
                .provider(TransportConfig.Provider.parse(provider)).build();
        // both ranks must come up together: each waits for the other's endpoint in the store
        CompletableFuture<Transport> one = CompletableFuture.supplyAsync(() -> Transports.create(config, store, 1, 2));
        Transport zero = Transports.create(config, store, 0, 2);
        ranks = new Transport[] {zero, one.get(60, TimeUnit.SECONDS)};
        CompletableFuture<Connection> c1 = CompletableFuture.supplyAsync(() -> ranks[1].connection(0));
        toPeer = ranks[0].connection(1);
        Connection toZero = c1.get(60, TimeUnit.SECONDS);
        buf = ranks[0].allocate(bytes);
        RegisteredBuffer echoBuf = ranks[1].allocate(bytes);
        echo = Thread.ofPlatform().daemon().name("jmh-echo").start(() -> {
            try {
                while (!stopping) {
                    ranks[1].await(toZero.irecv(echoBuf, 0, bytes, TAG), TIMEOUT);
                    ranks[1].await(toZero.isend(echoBuf, 0, bytes, TAG), TIMEOUT);
                }
            } catch (RuntimeException e) {
                if (!stopping) {
                    e.printStackTrace();
                }
            }
        });
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        stopping = true;
        ranks[1].abort(new IllegalStateException("benchmark over")); // wakes the echo thread
        echo.join(10_000);
        ranks[0].close();
        ranks[1].close();
        store.close();
        try (var files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    @Benchmark
    public long roundTrip() {
        Transport t = ranks[0];
        long s = toPeer.isend(buf, 0, bytes, TAG);
        long r = toPeer.irecv(buf, 0, bytes, TAG);
        t.await(s, TIMEOUT);
        return t.await(r, TIMEOUT);
    }
}
