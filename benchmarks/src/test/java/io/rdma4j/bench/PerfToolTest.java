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
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The tools end to end: ranks in separate JVMs, real collectives, results checked and written as CSV. */
class PerfToolTest {

    @Test
    void allReducePerfOnTwoLocalRanks(@TempDir Path dir) throws IOException {
        Path csv = dir.resolve("ar.csv");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int status = run(out, AllReducePerf.class, "allreduce", "--ranks", "2", "-b", "8", "-e", "64K", "-f", "8",
                "-n", "2", "-w", "1", "--jit-warmup", "1", "-c", "1", "-t", "shm", "-a", "rhd", "--csv", csv.toString());
        String table = out.toString(StandardCharsets.UTF_8);
        assertEquals(ExitStatus.OK, status, table);
        assertTrue(table.contains("# allreduce-perf: allreduce, 2 ranks, transport shm"), table);
        // a forced algorithm runs only where it can: the header says so, the algo column what ran
        assertTrue(table.contains("algorithm rhd where it can run (else the policy's"), table);
        assertTrue(table.contains("# Out of bounds values : 0 OK"), table);
        assertTrue(table.contains("# Avg bus bandwidth    : "), table);
        // a data row in nccl-tests' columns: size count type redop root, then time algbw busbw #wrong twice
        assertTrue(table.lines().anyMatch(l -> l.matches(
                " +32768 +8192 +float +sum +-1( +[0-9.]+ +[0-9.]+ +[0-9.]+ +0){2} +\\w+")), table);
        List<String[]> rows = rows(csv);
        assertEquals(2 * 5, rows.size()); // 8 B .. 32K by 8, out-of-place and in-place
        for (String[] r : rows) {
            assertEquals("allreduce", r[1]);
            assertEquals("2", r[2]);
            assertEquals("shm", r[3]);
            assertEquals("0", r[13], String.join(",", r)); // wrong elements
        }
        assertEquals("32768", rows.getLast()[6]);
        assertEquals("8192", rows.getLast()[7]); // floats
    }

    /**
     * --interleave: after the table, one row per size with its table time, then its back-to-back
     * and interleaved times and their ratio, as means and as medians over the rounds.
     */
    @Test
    void interleavedSizesAreReportedBesideTheTable() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int status = run(out, AllReducePerf.class, "allreduce", "--ranks", "2", "-b", "1K", "-e", "64K", "-f", "4",
                "-n", "5", "-w", "1", "--jit-warmup", "1", "-p", "out", "-t", "shm", "--interleave", "20");
        String table = out.toString(StandardCharsets.UTF_8);
        assertEquals(ExitStatus.OK, status, table);
        assertTrue(table.contains("# interleaved: 20 rounds"), table);
        for (long size : new long[] {1024, 4096, 16384, 65536}) {
            String row = table.lines().filter(l -> l.matches(" +" + size + "( +[0-9]+\\.[0-9]{2}){7}")).findFirst()
                    .orElseThrow(() -> new AssertionError(size + " B has no interleaved row:\n" + table));
            // size, table, mean back to back, mean interleaved, ratio, median back to back, median interleaved, ratio
            double[] f = Arrays.stream(row.trim().split(" +")).mapToDouble(Double::parseDouble).toArray();
            assertTrue(f[2] > 0 && f[3] > 0 && f[5] > 0 && f[6] > 0, row);
            assertEquals(f[3] / f[2], f[4], 0.006 + 0.01 * f[4], "ratio of the means: " + row);
            assertEquals(f[6] / f[5], f[7], 0.006 + 0.01 * f[7], "ratio of the medians: " + row);
        }
    }

    @Test
    void reduceScatterOverTcpOnThreeRanks(@TempDir Path dir) throws IOException {
        Path csv = dir.resolve("rs.csv");
        int status = run(new ByteArrayOutputStream(), CollectivePerf.class, null, "--op-kind", "reducescatter", "--ranks", "3", "-b", "96",
                "-e", "96K", "-f", "32", "-n", "2", "-w", "1", "--jit-warmup", "1", "-d", "int32", "-o", "max",
                "-t", "tcp", "--csv", csv.toString());
        assertEquals(ExitStatus.OK, status);
        List<String[]> rows = rows(csv);
        assertEquals(2 * 3, rows.size());
        for (String[] r : rows) {
            assertEquals("tcp", r[3]);
            assertEquals("0", r[13], String.join(",", r));
        }
        assertEquals("8", rows.getFirst()[7]); // 96 B of int32 over 3 ranks: 8 per rank
    }

    @Test
    void broadcastFromRankOneAndAllGatherOfHalfs(@TempDir Path dir) throws IOException {
        Path bc = dir.resolve("bc.csv");
        assertEquals(ExitStatus.OK, run(new ByteArrayOutputStream(), CollectivePerf.class, null, "--op-kind",
                "broadcast", "--ranks", "2", "-r", "1", "-b", "4K", "-e", "4K", "-n", "2", "-w", "1", "--jit-warmup", "1",
                "-d", "u8", "--csv", bc.toString()));
        List<String[]> rows = rows(bc);
        assertEquals(1, rows.size()); // broadcast is in place only
        assertEquals("in", rows.getFirst()[8]);
        assertEquals("0", rows.getFirst()[13]);
        Path ag = dir.resolve("ag.csv");
        assertEquals(ExitStatus.OK, run(new ByteArrayOutputStream(), CollectivePerf.class, null, "--op-kind",
                "allgather", "--ranks", "2", "-b", "1K", "-e", "1K", "-n", "2", "-w", "1", "--jit-warmup", "1",
                "-d", "half", "--csv", ag.toString()));
        for (String[] r : rows(ag)) {
            assertEquals("0", r[13], String.join(",", r));
            assertEquals("256", r[7]); // 1 KiB of halfs over 2 ranks: 256 each
        }
    }

    @Test
    void usageErrorsExitWithTwo() {
        assertEquals(ExitStatus.USAGE, run(new ByteArrayOutputStream(), AllReducePerf.class, "allreduce", "-d", "float8"));
        assertEquals(ExitStatus.USAGE, run(new ByteArrayOutputStream(), CollectivePerf.class, null, "--op-kind",
                "broadcast", "--ranks", "2", "-r", "2"));
    }

    private static int run(ByteArrayOutputStream out, Class<?> main, String fixed, String... args) {
        PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
        String tool = fixed == null ? "collective-perf" : "allreduce-perf";
        return new PerfTool(tool, fixed == null ? null : io.rdma4j.bench.coll.BenchCollective.named(fixed), main)
                .run(args, Map.of(), ps, ps);
    }

    private static List<String[]> rows(Path csv) throws IOException {
        List<String> lines = Files.readAllLines(csv);
        assertEquals(CsvResults.HEADER, lines.getFirst());
        return lines.stream().skip(1).map(l -> l.split(",")).toList();
    }
}
