package io.rdma4j.transport.shm;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.FileStore;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

/**
 * A private shm directory and file store for one test, plus helpers to run rank bodies on
 * threads and to fill and check test data.
 */
final class ShmTestGroup implements AutoCloseable {
    static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);

    final Path shmDir;
    final Path storeDir;
    final FileStore store;

    ShmTestGroup() {
        try {
            Path base = Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm") : Path.of(System.getProperty("java.io.tmpdir"));
            shmDir = Files.createTempDirectory(base, "rdma4j-shmtest-");
            storeDir = Files.createTempDirectory("rdma4j-store-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        store = new FileStore(storeDir);
    }

    TransportConfig config() {
        return config(Duration.ofSeconds(30));
    }

    TransportConfig config(Duration timeout) {
        return TransportConfig.builder().provider(TransportConfig.Provider.SHM).shmDir(shmDir).timeout(timeout)
                .maxOutstandingRequests(256).build();
    }

    ShmTransport transport(int rank, int size) {
        return new ShmTransport(config(), store, rank, size);
    }

    /** Runs {@code body(rank)} for every rank on its own thread; rethrows the first failure. */
    static void runRanks(int size, RankBody body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(size);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int r = 0; r < size; r++) {
                int rank = r;
                futures.add(pool.submit(() -> {
                    body.run(rank);
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                try {
                    f.get(120, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof Exception ex) {
                        throw ex;
                    }
                    throw e;
                } catch (TimeoutException e) {
                    throw new AssertionError("a rank did not finish within 120 s", e);
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @FunctionalInterface
    interface RankBody {
        void run(int rank) throws Exception;
    }

    /** Files left in the shm directory. */
    List<String> leftovers() {
        try (Stream<Path> s = Files.list(shmDir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A deterministic, position- and seed-dependent pattern (so shifted or stale data is caught). */
    static void fill(MemorySegment s, long offset, long length, int seed) {
        long x = 0x9E3779B97F4A7C15L * (seed + 1);
        long i = 0;
        for (; i + 8 <= length; i += 8) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, offset + i, x);
        }
        for (; i < length; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            s.set(ValueLayout.JAVA_BYTE, offset + i, (byte) (x >>> 56));
        }
    }

    /** -1 when {@code s[offset, +length)} holds the pattern of {@code seed}, else the first bad index. */
    static long check(MemorySegment s, long offset, long length, int seed) {
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment expected = arena.allocate(Math.max(1, length));
            fill(expected, 0, length, seed);
            return MemorySegment.mismatch(s, offset, offset + length, expected, 0, length);
        }
    }

    @Override
    public void close() {
        for (Path dir : List.of(shmDir, storeDir)) {
            try (Stream<Path> s = Files.walk(dir)) {
                s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException ignored) {
                // best effort
            }
        }
    }
}
