package io.rdma4j.bench.compare;

import io.rdma4j.bench.CsvResults;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AllReduceComparisonTest {

    /** A CSV of one pass: {size, time_us, wrong} triples, busbw derived as allreduce-perf does for 2 ranks. */
    private static Path csv(Path dir, String name, String system, long[][] rows) throws IOException {
        StringBuilder b = new StringBuilder(CsvResults.HEADER).append('\n');
        for (long[] r : rows) {
            double timeUs = r[1] / 100.0;
            double alg = r[0] / (timeUs * 1e3);
            b.append(String.format(Locale.ROOT, "%s,allreduce,2,shm,float,sum,%d,%d,out,20,%.3f,%.6f,%.6f,%d,ring%n",
                    system, r[0], r[0] / 4, timeUs, alg, alg, r[2]));
        }
        Path p = dir.resolve(name);
        Files.writeString(p, b);
        return p;
    }

    @Test
    void passesGiveEachSystemItsFastestRowPerSizeAndEveryPassIsReported(@TempDir Path dir) throws IOException {
        // time in 1/100 us: pass 1 has rdma4j slow at 8 B, pass 2 slow at 1 MiB; Open MPI the reverse
        Path ours1 = csv(dir, "r1.csv", "rdma4j", new long[][] {{8, 300, 0}, {1 << 20, 10_000, 0}});
        Path peer1 = csv(dir, "o1.csv", "openmpi", new long[][] {{8, 100, 0}, {1 << 20, 40_000, 0}});
        Path ours2 = csv(dir, "r2.csv", "rdma4j", new long[][] {{8, 110, 2}, {1 << 20, 90_000, 0}});
        Path peer2 = csv(dir, "o2.csv", "openmpi", new long[][] {{8, 200, 0}, {1 << 20, 20_000, 0}});
        List<AllReduceComparison.Curve> curves = AllReduceComparison.load(List.of(peer1, ours1, peer2, ours2));
        assertEquals(2, curves.size());
        AllReduceComparison.Curve ours = curves.stream().filter(c -> c.system().equals("rdma4j")).findFirst().orElseThrow();
        assertEquals(2, ours.passes().size());
        assertEquals(1.10, Reports.num(ours.bySize().get(8L), "time_us"), 1e-9, "pass 2 was faster at 8 B");
        assertEquals(100.0, Reports.num(ours.bySize().get(1L << 20), "time_us"), 1e-9, "pass 1 was faster at 1M");
        assertEquals("2", ours.bySize().get(8L).get("wrong"), "a wrong element of any pass shows");

        String md = AllReduceComparison.markdown(curves, "compare-mpi -P 2", "Open MPI", null,
                "allreduce-vs-openmpi.png", null);
        assertTrue(md.contains("| 8 | 1.10 | 1.00 | 1.10 | "), md);
        assertTrue(md.contains("| 1M | 100.00 | 200.00 | 0.50 | "), md);
        assertTrue(md.contains("fastest passes: geometric mean 0.74, max 1.10 (at 8); over 1.0x at 1 of 2 sizes (8)."), md);
        // on its own, pass 1 is 3x slower at 8 B and pass 2 4.5x slower at 1 MiB
        assertTrue(md.contains("- pass 1: time ratio max 3.00 (at 8); over 1.3x at 1 of 2 sizes (8)\n"), md);
        assertTrue(md.contains("- pass 2: time ratio max 4.50 (at 1M); over 1.3x at 1 of 2 sizes (1M)\n"), md);
        assertTrue(md.contains("2 passes"), md);
        assertFalse(md.contains("line latency"), "no latencies, no word of them: " + md);
        assertTrue(md.contains("on the default transport of this machine"), md);
        assertTrue(md.contains("Plot: `allreduce-vs-openmpi.png`"), md);
    }

    @Test
    void passesWhoseTurnsRanAtOneLineLatencyAreComparedOnTheirOwn(@TempDir Path dir) throws IOException {
        // pass 1: Open MPI fast, rdma4j slow (3x slower at 8 B); pass 2: both slow (rdma4j 0.9x);
        // pass 3: rdma4j fast throughout but Open MPI's level changed during its turn
        Path ours1 = csv(dir, "r1.csv", "rdma4j", new long[][] {{8, 60, 0}});
        Path peer1 = csv(dir, "o1.csv", "openmpi", new long[][] {{8, 20, 0}});
        Path ours2 = csv(dir, "r2.csv", "rdma4j", new long[][] {{8, 45, 0}});
        Path peer2 = csv(dir, "o2.csv", "openmpi", new long[][] {{8, 50, 0}});
        Path ours3 = csv(dir, "r3.csv", "rdma4j", new long[][] {{8, 18, 0}});
        Path peer3 = csv(dir, "o3.csv", "openmpi", new long[][] {{8, 40, 0}});
        Path lat = dir.resolve("lat.tsv");
        Files.writeString(lat, """
                1	2	openmpi	50	52
                1	2	rdma4j	230	228
                2	2	openmpi	210	215
                2	2	rdma4j	231	240
                3	2	openmpi	220	55
                3	2	rdma4j	53	49
                """);
        LinePhases phases = LinePhases.read(lat);
        assertEquals(LinePhases.Level.CHANGED, phases.turn(3, 2, false, 8).orElseThrow().level());
        assertEquals(List.of(false, true, false), List.of(phases.alike(1, 2), phases.alike(2, 2), phases.alike(3, 2)));
        String md = AllReduceComparison.markdown(AllReduceComparison.load(List.of(peer1, ours1, peer2, ours2, peer3, ours3)),
                "compare-mpi -P 3", "Open MPI", null, "allreduce-vs-openmpi.png", phases);
        // fastest passes: rdma4j 0.18 (pass 3) against Open MPI 0.20 (pass 1); alike: pass 2 alone, 0.45 / 0.50
        assertTrue(md.contains("| 8 | 0.18 | 0.20 | 0.90 | 0.90 | "), md);
        assertTrue(md.contains("one line latency (pass 2): geometric mean 0.90, max 0.90 (at 8); over 1.0x at 0 of 1 sizes."), md);
        assertTrue(md.contains("- pass 1: time ratio max 3.00 (at 8); over 1.3x at 1 of 1 sizes (8); line latency: rdma4j "
                + "230 -> 228 ns (slow), Open MPI 50 -> 52 ns (fast): not alike"), md);
        assertTrue(md.contains("- pass 2: time ratio max 0.90 (at 8); over 1.3x at 0 of 1 sizes; line latency: rdma4j "
                + "231 -> 240 ns (slow), Open MPI 210 -> 215 ns (slow)\n"), md);
        assertTrue(md.contains("Open MPI 220 -> 55 ns (changed during the turn): not alike"), md);
        assertTrue(md.contains("- pass 3, 2 ranks, rdma4j: 53 -> 49 ns (fast)"), md);
        assertTrue(md.contains("3 passes, the two systems taking turns, and each row"), md);
        assertFalse(md.contains("Every pass had both turns at one line latency"), md);

        Path alikeOnly = dir.resolve("alike.tsv");
        Files.writeString(alikeOnly, "1\t2\topenmpi\t210\t215\n1\t2\trdma4j\t231\t240\n");
        String one = AllReduceComparison.markdown(AllReduceComparison.load(List.of(peer1, ours1)), "compare-mpi",
                "Open MPI", null, "allreduce-vs-openmpi.png", LinePhases.read(alikeOnly));
        assertTrue(one.contains("Every pass had both turns at one line latency."), one);
        assertFalse(one.contains("The same over the passes"), one);
    }

    @Test
    void turnsOverSizeRangesAreJudgedPerRange(@TempDir Path dir) throws IOException {
        // one pass cut in two ranges: at 8 B both turns slow (rdma4j 0.9x); at 1 MiB rdma4j's turn
        // slow and Open MPI's fast (rdma4j 2x slower there); a second pass alike at 1 MiB only
        Path ours1 = csv(dir, "r1.csv", "rdma4j", new long[][] {{8, 45, 0}, {1 << 20, 20_000, 0}});
        Path peer1 = csv(dir, "o1.csv", "openmpi", new long[][] {{8, 50, 0}, {1 << 20, 10_000, 0}});
        Path ours2 = csv(dir, "r2.csv", "rdma4j", new long[][] {{8, 20, 0}, {1 << 20, 30_000, 0}});
        Path peer2 = csv(dir, "o2.csv", "openmpi", new long[][] {{8, 60, 0}, {1 << 20, 40_000, 0}});
        Path lat = dir.resolve("lat.tsv");
        Files.writeString(lat, """
                1	2	openmpi	230	228	8	1024
                1	2	rdma4j	231	240	8	1024
                1	2	rdma4j	235	232	2048	1048576
                1	2	openmpi	52	50	2048	1048576
                2	2	rdma4j	50	51	8	1024
                2	2	openmpi	240	238	8	1024
                2	2	openmpi	51	55	2048	1048576
                2	2	rdma4j	53	49	2048	1048576
                """);
        LinePhases phases = LinePhases.read(lat);
        assertTrue(phases.alike(1, 2, 8));
        assertFalse(phases.alike(1, 2, 1 << 20));
        assertFalse(phases.alike(1, 2), "one range of pass 1 was not alike");
        assertEquals(List.of(false, true), List.of(phases.alike(2, 2, 8), phases.alike(2, 2, 1 << 20)));
        String md = AllReduceComparison.markdown(AllReduceComparison.load(List.of(peer1, ours1, peer2, ours2)),
                "compare-mpi -P 2", "Open MPI", null, "allreduce-vs-openmpi.png", phases);
        // alike: 8 B from pass 1 only (0.45 / 0.50), 1 MiB from pass 2 only (300 / 400)
        assertTrue(md.contains("| 8 | 0.20 | 0.50 | 0.40 | 0.90 | "), md);
        assertTrue(md.contains("| 1M | 200.00 | 100.00 | 2.00 | 0.75 | "), md);
        assertTrue(md.contains("pairs of turns that ran at one line latency (2 of 4; at each size"), md);
        assertTrue(md.contains("- pass 1: time ratio max 2.00 (at 1M); over 1.3x at 1 of 2 sizes (1M); line latency: "
                + "8-1K: rdma4j 231 -> 240 ns (slow), Open MPI 230 -> 228 ns (slow); 2K-1M: rdma4j 235 -> 232 ns "
                + "(slow), Open MPI 52 -> 50 ns (fast) (not alike): where not alike"), md);
        assertTrue(md.contains("- pass 2, 2 ranks, 2K-1M, rdma4j: 53 -> 49 ns (fast)"), md);
        assertTrue(md.contains("2 passes, the two systems taking turns over each size range of a pass, the first to run"
                + " alternating, and each row"), md);
    }

    @Test
    void aLatencyFileWithAMalformedLineIsRefusedWithTheLine(@TempDir Path dir) throws IOException {
        Path lat = dir.resolve("lat.tsv");
        Files.writeString(lat, "1\t2\trdma4j\t230\n");
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> LinePhases.read(lat));
        assertTrue(e.getMessage().contains("1\t2\trdma4j\t230"), e.getMessage());
    }

    @Test
    void aTransportComparisonNamesItsTransportAndItsPlot(@TempDir Path dir) throws IOException {
        Path ours = csv(dir, "r.csv", "rdma4j", new long[][] {{8, 100, 0}});
        Path peer = csv(dir, "o.csv", "openmpi", new long[][] {{8, 200, 0}});
        String md = AllReduceComparison.markdown(AllReduceComparison.load(List.of(peer, ours)), "compare-mpi -t tcp",
                "Open MPI (btl tcp,self)", "tcp", "allreduce-tcp-vs-openmpi.png", null);
        assertTrue(md.startsWith("# rdma4j allreduce vs Open MPI (btl tcp,self) MPI_Allreduce"), md);
        assertTrue(md.contains("ranks as separate JVMs on the tcp transport,"), md);
        assertFalse(md.contains("default transport"), md);
        assertTrue(md.contains("Plot: `allreduce-tcp-vs-openmpi.png`"), md);
        assertTrue(md.contains("| 8 | 1.00 | 2.00 | 0.50 |"), md);
    }

    @Test
    void oneCsvPerSystemIsOnePassWithoutAPassList(@TempDir Path dir) throws IOException {
        Path ours = csv(dir, "r.csv", "rdma4j", new long[][] {{8, 100, 0}});
        Path peer = csv(dir, "o.csv", "openmpi", new long[][] {{8, 100, 0}});
        String md = AllReduceComparison.markdown(AllReduceComparison.load(List.of(peer, ours)), "compare-mpi", "Open MPI",
                null, "allreduce-vs-openmpi.png", null);
        assertTrue(md.contains("| 8 | 1.00 | 1.00 | 1.00 |"), md);
        assertFalse(md.contains("- pass 1"), md);
        assertFalse(md.contains("passes"), md);
    }
}
