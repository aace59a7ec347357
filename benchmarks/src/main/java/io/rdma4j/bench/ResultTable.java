package io.rdma4j.bench;

import java.io.PrintStream;
import java.util.Locale;

/** Prints results in nccl-tests' layout, so that its readers (and parsers) need nothing new. */
public final class ResultTable {
    private final PrintStream out;
    private double busBwSum;
    private int busBwCount;
    private long wrong;
    private boolean checked;

    public ResultTable(PrintStream out) {
        this.out = out;
    }

    public void header() {
        out.println("#");
        out.printf("# %58s %32s%n", "out-of-place", "in-place");
        out.printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %s%n",
                "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                "time", "algbw", "busbw", "#wrong", "algo");
        out.printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s%n",
                "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
        out.flush();
    }

    public void row(ResultRow r) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "%12d  %12d  %8s  %6s  %6d", r.bytes(), r.count(), r.type(), r.op(), r.root()));
        cells(b, r.outOfPlace());
        cells(b, r.inPlace());
        b.append("  ").append(r.algorithm());
        out.println(b);
        out.flush();
    }

    private void cells(StringBuilder b, Measurement m) {
        if (m == null) {
            b.append(String.format(Locale.ROOT, "  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A"));
            return;
        }
        b.append(String.format(Locale.ROOT, "  %7s  %6.2f  %6.2f  %6s", time(m.timeUs()), m.algBw(), m.busBw(),
                m.wrong() == Measurement.NOT_CHECKED ? "N/A" : Long.toString(m.wrong())));
        busBwSum += m.busBw();
        busBwCount++;
        if (m.wrong() != Measurement.NOT_CHECKED) {
            checked = true;
            wrong += m.wrong();
        }
    }

    /** nccl-tests' precision: more digits for short times. */
    static String time(double us) {
        if (us >= 10000) {
            return String.format(Locale.ROOT, "%7.0f", us);
        }
        if (us >= 100) {
            return String.format(Locale.ROOT, "%7.1f", us);
        }
        return String.format(Locale.ROOT, "%7.2f", us);
    }

    /** Mean busbw over every printed measurement, as nccl-tests' "Avg bus bandwidth". */
    public double averageBusBw() {
        return busBwCount == 0 ? 0 : busBwSum / busBwCount;
    }

    public long wrong() {
        return wrong;
    }

    /**
     * The summary lines; {@code warmUpWrong} counts the wrong elements that checked calls outside
     * the table (the JIT warm-up's) found: they fail the run as the table's do, so they show here.
     */
    public void footer(long warmUpWrong) {
        long all = wrong + warmUpWrong;
        out.printf("# Out of bounds values : %s%n", !checked ? "not checked (-c 0)" : all == 0 ? "0 OK"
                : all + " FAILED" + (warmUpWrong == 0 ? "" : " (" + warmUpWrong + " in the JIT warm-up's checked calls)"));
        out.printf(Locale.ROOT, "# Avg bus bandwidth    : %.4f%n", averageBusBw());
        out.println("#");
        out.flush();
    }
}
