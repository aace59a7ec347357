package io.rdma4j.bench;

import io.rdma4j.bench.launch.ExitStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** p2p-perf's bandwidth-only mode (as benchmarks/scripts/verbs-vs-perftest --provider runs it). */
class P2pPerfTest {

    @Test
    void bandwidthOnlyRunReportsNoLatency(@TempDir Path dir) throws IOException {
        Path csv = dir.resolve("p2p.csv");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int status = run(out, "-t", "shm", "-b", "64K", "-e", "256K", "-f", "4", "-W", "4", "--measure", "bandwidth", "--jit-warmup", "100",
                "--bw-bytes", "4M", "--csv", csv.toString());
        String table = out.toString(StandardCharsets.UTF_8);
        assertEquals(ExitStatus.OK, status, table);
        assertTrue(table.lines().anyMatch(l -> l.matches(" +65536 +- +[0-9]+\\.[0-9]{3}")), table);
        assertTrue(table.lines().anyMatch(l -> l.matches(" +262144 +- +[0-9]+\\.[0-9]{3}")), table);
        List<String> rows = Files.readAllLines(csv);
        assertEquals(3, rows.size(), String.join("\n", rows)); // header + one bandwidth row per size
        assertTrue(rows.get(1).startsWith("rdma4j,shm,bandwidth,65536,16,"), rows.get(1)); // 4 MiB / (4 x 64 KiB)
        assertTrue(rows.get(2).startsWith("rdma4j,shm,bandwidth,262144,4,"), rows.get(2));
    }

    @Test
    void bandwidthWindowsCoverTheVolume() {
        assertEquals(20, P2pPerf.bandwidthWindows(1 << 20, 64, 200, 0)); // osu style: iters / 10
        assertEquals(1, P2pPerf.bandwidthWindows(1 << 20, 64, 5, 0));
        assertEquals(8, P2pPerf.bandwidthWindows(64 << 10, 8, 200, 4 << 20)); // 4 MiB in windows of 512 KiB
        assertEquals(2, P2pPerf.bandwidthWindows(3 << 20, 1, 200, 5 << 20)); // rounded up to whole windows
        assertEquals(1, P2pPerf.bandwidthWindows(8 << 20, 8, 200, 1 << 20));
    }

    /** The warm-up moves about as many bytes at 16 MiB as at the sizes it is sized for, not thousands of times more. */
    @Test
    void theWarmUpOfLargeMessagesIsBoundedByVolume() {
        assertEquals(2000, P2pPerf.warmUpCalls(8192, 2000)); // small sizes: the full count, for the JIT
        assertEquals(2000, P2pPerf.warmUpCalls(8, 2000));
        assertEquals(250, P2pPerf.warmUpCalls(64 << 10, 2000));
        assertEquals(3, P2pPerf.warmUpCalls(16 << 20, 2000)); // every branch, three round trips
        assertEquals(250, P2pPerf.warmUpWindows(64 << 10, 2000));
        assertEquals(1, P2pPerf.warmUpWindows(16 << 20, 2000));
        assertEquals(250, P2pPerf.warmUpWindows(8, 2000));
    }

    @Test
    void aJobOfAnotherSizeThanTwoIsRefusedBeforeItWaitsForPeers() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
        assertEquals(ExitStatus.USAGE, new P2pPerf().run(new String[] {"-t", "tcp"},
                Map.of("RANK", "0", "WORLD_SIZE", "3", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "1"), ps, ps));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("needs exactly 2 ranks, the job has WORLD_SIZE=3"),
                out.toString(StandardCharsets.UTF_8));
    }

    @Test
    void badMeasureIsAUsageError() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertEquals(ExitStatus.USAGE, run(out, "--measure", "throughput"));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("--measure needs both, latency or bandwidth"));
    }

    /** A count with a fraction is refused, not truncated (-W 1.9 ran a window of 1, -n 0.5 refused as "positive"). */
    @Test
    void fractionalCountsAreUsageErrors() {
        for (String option : new String[] {"-W", "-n", "-N", "--jit-warmup"}) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            assertEquals(ExitStatus.USAGE, run(out, option, "1.9"), option);
            assertTrue(out.toString(StandardCharsets.UTF_8).contains("option " + option + " needs an integer, got '1.9'"),
                    out.toString(StandardCharsets.UTF_8));
        }
    }

    /** A rank started by Open MPI (or PMI) reads its rank and size as the communicator does; a bad one is a usage error. */
    @Test
    void aRankOfAnotherLauncherIsReadOrRefusedClearly() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
        assertEquals(ExitStatus.USAGE, new P2pPerf().run(new String[0],
                Map.of("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "3"), ps, ps));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("needs exactly 2 ranks, the job has OMPI_COMM_WORLD_SIZE=3"),
                out.toString(StandardCharsets.UTF_8));
        assertEquals(ExitStatus.USAGE, new P2pPerf().run(new String[0],
                Map.of("PMI_RANK", "first", "PMI_SIZE", "2"), ps, ps));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("rank is not a number: PMI_RANK='first'"),
                out.toString(StandardCharsets.UTF_8));
    }

    /**
     * What a user's set-up gets wrong is said in one line, not with a stack trace: a bad setting
     * is a usage error, a store nobody serves a failure naming the store.
     */
    @Test
    void aSetUpProblemIsOneLineWithoutAStackTrace() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
        String[] tcp = {"-t", "tcp"};
        assertEquals(ExitStatus.USAGE, new P2pPerf().run(tcp, UnservedJob.env("RDMA4J_TIMEOUT_MS", "soon"), ps, ps));
        assertEquals(ExitStatus.FAILED, new P2pPerf().run(tcp, UnservedJob.env(), ps, ps),
                out.toString(StandardCharsets.UTF_8));
        UnservedJob.assertSaidWithoutStackTrace(out.toString(StandardCharsets.UTF_8), "RDMA4J_TIMEOUT_MS",
                "rank 1 could not reach the job's store");
    }

    private static int run(ByteArrayOutputStream out, String... args) {
        PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
        return new P2pPerf().run(args, Map.of(), ps, ps);
    }
}
