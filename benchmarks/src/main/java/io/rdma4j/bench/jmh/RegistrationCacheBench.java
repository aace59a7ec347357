package io.rdma4j.bench.jmh;

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

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * What a training step pays to "register" a buffer it registered before: the transport's
 * registration-cache hit (the collectives call register() on every user segment of every
 * call), with {@code cached} live registrations in the cache. Must be fast and allocate
 * nothing ({@code -prof gc}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class RegistrationCacheBench {
    @Param({"shm", "tcp"})
    public String provider;
    @Param({"1", "16"})
    public int cached;

    private Path dir;
    private FileStore store;
    private Transport transport;
    private Arena arena;
    private MemorySegment[] segments;
    private int next;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        dir = Files.createTempDirectory("rdma4j-jmh-reg");
        store = new FileStore(dir);
        TransportConfig config = TransportConfig.builder().provider(TransportConfig.Provider.parse(provider)).build();
        transport = Transports.create(config, store, 0, 1);
        arena = Arena.ofShared();
        segments = new MemorySegment[cached];
        for (int i = 0; i < cached; i++) {
            segments[i] = arena.allocate(1 << 20, 4096);
            transport.register(segments[i]);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        transport.close();
        arena.close();
        store.close();
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /** A hit on each cached segment in turn (the last one registered is the worst case of a linear scan). */
    @Benchmark
    public RegisteredBuffer registerCached() {
        int i = next;
        next = i + 1 == segments.length ? 0 : i + 1;
        return transport.register(segments[i]);
    }
}
