package io.rdma4j.bench.verbsperf;

import java.io.PrintStream;
import java.util.Locale;

/** perftest's report text: banner, column headers and rows, character for character where it matters to parsers. */
final class PerfReport {
    static final String LINE = "---------------------------------------------------------------------------------------";
    static final String BW_HEADER =
            " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
    static final String LAT_HEADER = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
            + "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";

    private final PrintStream out;

    PerfReport(PrintStream out) {
        this.out = out;
    }

    void banner(PerfParams p, PerfEndpoint e, String mtu, String role) {
        out.println(LINE);
        out.println("                    " + p.mode.title() + " (rdma4j verbs-perf, " + role + ")");
        out.printf(Locale.ROOT, " Number of qps   : 1\t\tDevice         : %s%n", e.ctx.name());
        out.println(" Connection type : RC\t\tTransport type : " + (e.port.isEthernet() ? "RoCE" : "IB"));
        if (!p.isServer() || !p.mode.isBandwidth()) {
            out.println(" TX depth        : " + p.txDepth);
        }
        if (p.mode.usesReceives()) {
            out.println(" RX depth        : " + p.rxDepth);
        }
        if (p.mode.isBandwidth()) {
            out.println(" CQ Moderation   : " + p.cqMod);
        }
        if (p.postList > 1) {
            out.println(" Post List       : " + p.postList);
        }
        out.println(" Mtu             : " + mtu + "[B]");
        out.println(" Link type       : " + e.port.linkLayerName());
        if (e.gidIndex >= 0) {
            out.println(" GID index       : " + e.gidIndex);
        }
        out.println(" Max inline data : " + e.inlineSize + "[B]");
        if (p.warmupRound(p.sizes[0]) > 0 && (p.mode.isBandwidth() ? !p.isServer() : true)) {
            out.println(" Warm-up         : until the JIT is quiet, at most " + p.warmupRounds + " rounds");
        }
        out.println(" Data ex. method : Ethernet (TCP)");
        out.println(LINE);
    }

    void addresses(PeerInfo local, PeerInfo remote) {
        out.println(local.describe("local"));
        out.println(remote.describe("remote"));
        out.println(LINE);
    }

    void bandwidthHeader() {
        out.println(BW_HEADER);
    }

    void latencyHeader() {
        out.println(LAT_HEADER);
    }

    void row(BandwidthResult r) {
        out.println(String.format(Locale.ROOT, " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f",
                r.size(), r.iters(), r.peakMBps(), r.averageMBps(), r.msgRateMpps()));
        out.flush();
    }

    void row(LatencyResult r) {
        out.println(String.format(Locale.ROOT,
                " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f",
                r.size(), r.iters(), r.minUs(), r.maxUs(), r.typicalUs(), r.averageUs(), r.stdevUs(), r.p99Us(),
                r.p999Us()));
        out.flush();
    }

    void end() {
        out.println(LINE);
        out.flush();
    }
}
