package io.rdma4j.bench;

import io.rdma4j.bench.check.TestPattern;
import io.rdma4j.bench.coll.BenchCollective;
import io.rdma4j.bench.coll.Slots;
import io.rdma4j.bench.launch.ExitStatus;
import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.FileStore;
import io.rdma4j.transport.bootstrap.Store;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The benchmark's result check catches a wrong result that the library delivered: one element of
 * one rank's allreduce result is corrupted after each call (by a wrapper around the benchmark's
 * allreduce, so the library itself is untouched), and the corruption must show on rank 0, which
 * sums counts it reads from the store, and in both ranks' exit status.
 */
@Timeout(120)
class WrongResultsTest {

    @Test
    void oneCorruptedElementOnOneRankFailsTheRun(@TempDir Path dir) throws Exception {
        String[] args = {"-b", "64", "-e", "4K", "-f", "8", "-n", "2", "-w", "1", "--jit-warmup", "1", "-p", "out"};
        int[] status = new int[2];
        ByteArrayOutputStream[] out = {new ByteArrayOutputStream(), new ByteArrayOutputStream()};
        ByteArrayOutputStream[] err = {new ByteArrayOutputStream(), new ByteArrayOutputStream()};
        ExecutorService ranks = Executors.newFixedThreadPool(2);
        try {
            Future<?>[] done = new Future<?>[2];
            for (int r = 0; r < 2; r++) {
                int rank = r;
                done[r] = ranks.submit(() -> {
                    PerfOptions o = PerfOptions.parse(args, new CorruptOneElement(BenchCollective.named("allreduce"), 1, 3));
                    TransportConfig tcp = TransportConfig.builder().provider(TransportConfig.Provider.TCP)
                            .tcpAddress("127.0.0.1").build();
                    try (Store store = new FileStore(dir)) {
                        Communicator comm = Communicator.builder().rank(rank).size(2).store(store).transportConfig(tcp)
                                .options(CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(60))).build();
                        status[rank] = PerfTool.benchmark(comm, store, o, "allreduce-perf",
                                new PrintStream(out[rank], true, StandardCharsets.UTF_8),
                                new PrintStream(err[rank], true, StandardCharsets.UTF_8));
                    }
                    return null;
                });
            }
            for (Future<?> f : done) {
                f.get(100, TimeUnit.SECONDS);
            }
        } finally {
            ranks.shutdownNow();
        }
        String table = out[0].toString(StandardCharsets.UTF_8);
        String rank1Errors = err[1].toString(StandardCharsets.UTF_8);
        assertEquals(ExitStatus.WRONG_RESULTS, status[0], "rank 0 (clean result, sums every rank's count)\n" + table);
        assertEquals(ExitStatus.WRONG_RESULTS, status[1], rank1Errors);
        assertTrue(rank1Errors.contains("rank 1, allreduce 512 B out-of-place: 1 wrong elements, first at index 3"),
                rank1Errors);
        assertTrue(!err[0].toString(StandardCharsets.UTF_8).contains("wrong elements"), "rank 0's own result was right");
        // every size's row: one wrong element, which rank 0 counted from rank 1's report
        assertTrue(table.lines().anyMatch(l -> l.matches(
                " +512 +128 +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +1( +N/A){4} +\\w+")), table);
        // the table's three, and the JIT warm-up's checked calls' (which fail the run too)
        java.util.regex.Matcher footer = java.util.regex.Pattern.compile(
                "# Out of bounds values : (\\d+) FAILED \\((\\d+) in the JIT warm-up's checked calls\\)").matcher(table);
        assertTrue(footer.find(), table);
        assertEquals(3 + Long.parseLong(footer.group(2)), Long.parseLong(footer.group(1)), table);
    }

    /** The benchmark's allreduce, then element {@code index} of rank {@code rank}'s result overwritten. */
    private record CorruptOneElement(BenchCollective inner, int rank, long index) implements BenchCollective {
        @Override
        public void run(Communicator comm, Slots slots, long count, DataType type, ReduceOp op, int root) {
            inner.run(comm, slots, count, type, op, root);
            if (comm.rank() == rank && count > index) {
                slots.recv().setAtIndex(ValueLayout.JAVA_FLOAT, index, -7f);
            }
        }

        @Override
        public String name() {
            return inner.name();
        }

        @Override
        public boolean reduces() {
            return inner.reduces();
        }

        @Override
        public boolean rooted() {
            return inner.rooted();
        }

        @Override
        public double busFactor(int ranks) {
            return inner.busFactor(ranks);
        }

        @Override
        public long count(long bytes, int elementSize, int ranks) {
            return inner.count(bytes, elementSize, ranks);
        }

        @Override
        public long sendElements(long count, int ranks) {
            return inner.sendElements(count, ranks);
        }

        @Override
        public long recvElements(long count, int ranks) {
            return inner.recvElements(count, ranks);
        }

        @Override
        public long algBytes(long count, int elementSize, int ranks) {
            return inner.algBytes(count, elementSize, ranks);
        }

        @Override
        public Slots slots(MemorySegment sendBuf, MemorySegment recvBuf, long count, int elementSize, int rank,
                           int ranks, boolean inPlace) {
            return inner.slots(sendBuf, recvBuf, count, elementSize, rank, ranks, inPlace);
        }

        @Override
        public double expected(TestPattern pattern, int rank, int ranks, int root, long count, long index) {
            return inner.expected(pattern, rank, ranks, root, count, index);
        }
    }
}
