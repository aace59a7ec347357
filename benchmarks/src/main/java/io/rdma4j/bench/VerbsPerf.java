package io.rdma4j.bench;

import io.rdma4j.bench.launch.ExitStatus;
import io.rdma4j.bench.verbsperf.PerfParams;
import io.rdma4j.bench.verbsperf.VerbsPerfRun;

import java.io.IOException;
import java.io.PrintStream;

/**
 * {@code bin/rdma4j verbs-perf}: Java equivalents of perftest's ib_write_bw, ib_send_lat and
 * ib_write_lat on rdma4j's verbs layer, with the same options and report columns, so that the
 * two can be run side by side on one device pair (benchmarks/scripts/verbs-vs-perftest).
 */
public final class VerbsPerf {
    private VerbsPerf() {
    }

    public static void main(String[] args) {
        ExitStatus.exit(() -> run(args, System.out, System.err));
    }

    /** Runs one side of a test; returns the exit status (see {@link ExitStatus}). */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        PerfParams p;
        try {
            p = PerfParams.parse(args);
        } catch (IllegalArgumentException e) {
            err.println("verbs-perf: " + e.getMessage());
            err.print(PerfParams.usage());
            return ExitStatus.USAGE;
        }
        if (p.help) {
            out.print(PerfParams.usage());
            return ExitStatus.OK;
        }
        try {
            new VerbsPerfRun(p, out, err).run();
            return ExitStatus.OK;
        } catch (IOException | RuntimeException e) {
            out.flush();
            err.println("verbs-perf " + p.mode.modeName() + " (" + (p.isServer() ? "server" : "client") + "): "
                    + e.getMessage());
            return ExitStatus.FAILED;
        }
    }
}
