package io.rdma4j.bench.verbsperf;

import io.rdma4j.verbs.Mtu;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * One verbs-perf run, either side: set up the endpoint, exchange addresses out of band,
 * connect the QP, then run the test for each message size and print perftest's report.
 */
public final class VerbsPerfRun {
    private final PerfParams p;
    private final PrintStream out;
    private final PrintStream err;
    private final PerfReport report;

    /** {@code out} gets the report, {@code err} the warnings. */
    public VerbsPerfRun(PerfParams p, PrintStream out, PrintStream err) {
        this.p = p;
        this.out = out;
        this.err = err;
        this.report = new PerfReport(out);
    }

    public void run() throws IOException {
        try (PerfEndpoint e = new PerfEndpoint(p)) {
            if (p.isServer()) {
                out.println();
                out.println("************************************");
                out.println("* Waiting for client to connect... *");
                out.println("************************************");
                out.flush();
            }
            try (OobChannel oob = p.isServer() ? OobChannel.accept(p.tcpPort, p.oobTimeoutSeconds)
                    : OobChannel.connect(p.serverHost, p.tcpPort, p.oobTimeoutSeconds, err)) {
                PeerInfo local = e.info();
                PeerInfo remote = oob.exchange(local);
                Mtu mtu = e.connect(remote);
                oob.barrier("connected");
                report.banner(p, e, Integer.toString(mtu.bytes()), p.isServer() ? "server" : "client");
                report.addresses(local, remote);
                switch (p.mode) {
                    case WRITE_BW -> writeBandwidth(e, oob, remote);
                    case SEND_LAT -> sendLatency(e, oob);
                    case WRITE_LAT -> writeLatency(e, oob, remote);
                }
                report.end();
            }
        }
    }

    private void writeBandwidth(PerfEndpoint e, OobChannel oob, PeerInfo remote) throws IOException {
        report.bandwidthHeader();
        if (p.isServer()) {
            // perftest's server only waits; this one also prints each row and checks that the
            // client's bytes arrived where they were written
            for (int size : p.sizes) {
                if (p.warmupRound(size) > 0 && !JitWarmup.settle(30_000)) {
                    err.println("verbs-perf: this JVM's compiler or GC threads are still busy after 30 s; "
                            + "they may slow the client's measurement of size " + size);
                }
                oob.barrier("write_bw " + size);
                report.row(BandwidthResult.fromValues(oob.receiveValues("the write_bw results of size " + size)));
                checkPattern(e.buf, e.half, size);
            }
            return;
        }
        fillPattern(e.buf, 0, e.half);
        try (WriteBandwidth bw = new WriteBandwidth(e, p, remote)) {
            for (int size : p.sizes) {
                bw.prepare(size);
                oob.barrier("write_bw " + size);
                warmUp(() -> bw.run(p.warmupRound(size), false), null, size);
                BandwidthResult r = bw.run(p.iters, true);
                report.row(r);
                oob.sendValues(r.toValues());
            }
        }
    }

    private void sendLatency(PerfEndpoint e, OobChannel oob) throws IOException {
        report.latencyHeader();
        try (SendLatency lat = new SendLatency(e, p, oob)) {
            for (int size : p.sizes) {
                lat.prepare(size);
                warmUp(() -> lat.run(p.warmupRound(size), false), oob, size);
                report.row(lat.run(p.iters, true));
            }
        }
    }

    private void writeLatency(PerfEndpoint e, OobChannel oob, PeerInfo remote) throws IOException {
        report.latencyHeader();
        try (WriteLatency lat = new WriteLatency(e, p, oob, remote)) {
            for (int size : p.sizes) {
                lat.prepare(size);
                warmUp(() -> lat.run(p.warmupRound(size), false), oob, size);
                report.row(lat.run(p.iters, true));
            }
        }
    }

    private void warmUp(JitWarmup.Round round, OobChannel peer, int size) throws IOException {
        if (p.warmupRound(size) == 0) {
            return;
        }
        int rounds = JitWarmup.untilQuiet(round, peer, p.warmupRounds);
        if (rounds == p.warmupRounds) {
            err.println("verbs-perf: the JIT was still busy after " + rounds + " warm-up rounds of size " + size
                    + "; the measurement may include compilation (raise --warmup-rounds)");
        }
    }

    static byte patternByte(long i) {
        return (byte) (i * 31 + 7);
    }

    static void fillPattern(MemorySegment s, long offset, long length) {
        for (long i = 0; i < length; i++) {
            s.set(JAVA_BYTE, offset + i, patternByte(i));
        }
    }

    /** The first message of every write_bw run lands at offset 0 of the target half. */
    static void checkPattern(MemorySegment s, long offset, int size) {
        for (int i = 0; i < size; i++) {
            byte got = s.get(JAVA_BYTE, offset + i);
            if (got != patternByte(i)) {
                throw new IllegalStateException("write_bw data check failed at byte " + i + " of a " + size
                        + "-byte message: 0x" + Integer.toHexString(got & 0xff) + " instead of 0x"
                        + Integer.toHexString(patternByte(i) & 0xff));
            }
        }
    }
}
