package io.rdma4j.bench;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Results as CSV, one line per measurement, in the schema that the comparison tools read (our
 * C benchmarks write the same columns).
 */
public final class CsvResults implements AutoCloseable {
    public static final String HEADER =
            "system,collective,ranks,transport,dtype,op,size_bytes,count,placement,iters,time_us,algbw_gbs,busbw_gbs,wrong,algo";

    private final PrintWriter out;
    private final String system;
    private final String collective;
    private final int ranks;
    private final String transport;

    /**
     * Refuses, before any rank starts, a {@code --csv} path that can only fail when rank 0 opens it
     * after the job ran: an existing directory.
     */
    public static void checkTarget(Path file) {
        if (Files.isDirectory(file)) {
            throw new IllegalArgumentException("--csv " + file + " is a directory; give a file name");
        }
    }

    public CsvResults(Path file, String system, String collective, int ranks, String transport) {
        try {
            Path parent = file.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            this.out = new PrintWriter(Files.newBufferedWriter(file));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
        }
        this.system = system;
        this.collective = collective;
        this.ranks = ranks;
        this.transport = transport;
        out.println(HEADER);
    }

    public void row(ResultRow r) {
        line(r, "out", r.outOfPlace());
        line(r, "in", r.inPlace());
        out.flush();
    }

    private void line(ResultRow r, String placement, Measurement m) {
        if (m == null) {
            return;
        }
        out.printf(Locale.ROOT, "%s,%s,%d,%s,%s,%s,%d,%d,%s,%d,%.3f,%.6f,%.6f,%d,%s%n", system, collective, ranks,
                transport, r.type(), r.op(), r.bytes(), r.count(), placement, m.iterations(), m.timeUs(), m.algBw(),
                m.busBw(), m.wrong(), r.algorithm());
    }

    @Override
    public void close() {
        out.close();
    }
}
