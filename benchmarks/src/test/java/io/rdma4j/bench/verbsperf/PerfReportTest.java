package io.rdma4j.bench.verbsperf;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Rows must read like perftest 4.5's, so that one parser (benchmarks/scripts/verbs-vs-perftest) reads both. */
class PerfReportTest {

    private static String print(java.util.function.Consumer<PerfReport> what) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream ps = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            what.accept(new PerfReport(ps));
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    void bandwidthRowHasPerftestsColumns() {
        String out = print(r -> {
            r.bandwidthHeader();
            r.row(new BandwidthResult(65536, 5000, 30.5, 25.91, 0.000415));
        });
        String[] lines = out.split("\n");
        // perftest 4.5's header and row, copied from an ib_write_bw run
        assertEquals(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]", lines[0]);
        assertEquals(" 65536      5000             30.50              25.91  \t\t   0.000415", lines[1]);
    }

    @Test
    void latencyRowHasPerftestsColumns() {
        String out = print(r -> {
            r.latencyHeader();
            r.row(new LatencyResult(2, 1000, 19.26, 729.87, 20.03, 21.79, 10.72, 87.23, 729.87));
        });
        String[] lines = out.split("\n");
        assertEquals(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
                + "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ", lines[0]);
        assertEquals(" 2       1000          19.26          729.87       20.03    \t       21.79       \t10.72  \t\t87.23   "
                + "\t\t729.87 ", lines[1]);
        String[] fields = lines[1].trim().split("\\s+");
        assertEquals(9, fields.length);
        assertEquals("20.03", fields[4]);
    }

    @Test
    void dataCheckNamesTheFirstWrongByte() {
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            var s = arena.allocate(8192);
            VerbsPerfRun.fillPattern(s, 4096, 4096);
            VerbsPerfRun.checkPattern(s, 4096, 4096);
            s.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 4096 + 100, (byte) 0);
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> VerbsPerfRun.checkPattern(s, 4096, 4096));
            assertTrue(e.getMessage().contains("byte 100"), e.getMessage());
        }
    }

    @Test
    void stallGuardFailsAfterItsLimitWithoutProgress() {
        StallGuard g = new StallGuard(1, "peer 10.0.0.2");
        for (int i = 0; i < StallGuard.CHECK_EVERY; i++) {
            g.idle("a completion", 3, 10); // first check only starts the clock
        }
        g.progress();
        for (int i = 0; i < StallGuard.CHECK_EVERY; i++) {
            g.idle("a completion", 3, 10);
        }
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
            for (int i = 0; i < StallGuard.CHECK_EVERY; i++) {
                g.idle("a completion", 3, 10);
            }
        });
        assertTrue(e.getMessage().contains("a completion") && e.getMessage().contains("peer 10.0.0.2")
                && e.getMessage().contains("3 of 10"), e.getMessage());
    }
}
