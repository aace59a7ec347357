package io.rdma4j.bench.jmh;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.GradientBucketer;
import io.rdma4j.collectives.ReduceOp;
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
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * One collective call of a 2-rank communicator in one JVM, issued synchronously, asynchronously
 * and awaited, or as one {@link GradientBucketer} step: the benchmark thread is rank 0, a
 * background thread is rank 1 making the same calls for as long as the trial lasts. {@code -prof
 * gc} must show ~0 B/op for all three (the asynchronous path reuses its queued requests and
 * handles).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector"})
public class AsyncCollectiveBench {
    private static final Duration AWAIT = Duration.ofSeconds(30);

    @Param({"shm", "tcp"})
    public String provider;
    @Param({"sync", "async", "bucketer"})
    public String call;

    private Path dir;
    private FileStore store;
    private final Rank[] ranks = new Rank[2];
    private Thread partner;
    private volatile boolean stopping;

    /** One rank's communicator and the buffers its calls use. */
    private static final class Rank implements AutoCloseable {
        final Transport transport;
        final Communicator comm;
        final Arena arena = Arena.ofShared();
        final MemorySegment data;
        final GradientBucketer bucketer;
        final int gradients;

        Rank(TransportConfig config, FileStore store, int rank) {
            transport = Transports.create(config, store, rank, 2);
            comm = Communicator.builder().transport(transport).store(store)
                    .options(CollectiveOptions.defaults().withTimeout(AWAIT)).build();
            data = arena.allocate(4096);
            List<MemorySegment> grads = new ArrayList<>();
            for (int k = 0; k < 6; k++) {
                grads.add(arena.allocate(1024L << k));
            }
            gradients = grads.size();
            bucketer = new GradientBucketer(comm, DataType.F32, grads, 16 << 10, ReduceOp.AVG);
        }

        void call(String kind) {
            switch (kind) {
                case "sync" -> comm.allReduce(data, DataType.F32, ReduceOp.SUM);
                case "async" -> comm.allReduceAsync(data, DataType.F32, ReduceOp.SUM).await(AWAIT);
                case "bucketer" -> {
                    for (int k = 0; k < gradients; k++) {
                        bucketer.markReady(k);
                    }
                    bucketer.finish(AWAIT);
                }
                default -> throw new IllegalArgumentException("unknown call " + kind);
            }
        }

        @Override
        public void close() {
            bucketer.close();
            comm.close();
            arena.close();
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        dir = Files.createTempDirectory("rdma4j-jmh-async");
        store = new FileStore(dir);
        TransportConfig config = TransportConfig.builder().fromEnvironment()
                .provider(TransportConfig.Provider.parse(provider)).build();
        // both ranks must come up together: each waits for the other in the store
        CompletableFuture<Rank> one = CompletableFuture.supplyAsync(() -> new Rank(config, store, 1));
        ranks[0] = new Rank(config, store, 0);
        ranks[1] = one.get(60, TimeUnit.SECONDS);
        partner = Thread.ofPlatform().daemon().name("jmh-rank1").start(() -> {
            try {
                while (!stopping) {
                    ranks[1].call(call);
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
        ranks[1].comm.abort(new IllegalStateException("benchmark over")); // its last call has no partner
        partner.join(10_000);
        ranks[0].close();
        ranks[1].close();
        store.close();
        try (var files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    @Benchmark
    public void allReduce4KiB() {
        ranks[0].call(call);
    }
}
