package io.rdma4j.bench.verbsperf;

/**
 * The perftest program a verbs-perf run stands in for, with that program's defaults
 * (perftest_parameters.h: DEF_SIZE_BW/LAT, DEF_ITERS_WB/DEF_ITERS, DEF_TX_BW/LAT,
 * DEF_INLINE_SEND_RC_UC / DEF_INLINE_WRITE).
 */
public enum PerfMode {
    WRITE_BW("write_bw", "ib_write_bw", "RDMA_Write BW Test", 65536, 5000, 128, 0),
    SEND_LAT("send_lat", "ib_send_lat", "Send Latency Test", 2, 1000, 1, 236),
    WRITE_LAT("write_lat", "ib_write_lat", "RDMA_Write Latency Test", 2, 1000, 1, 220);

    private final String name;
    private final String perftestName;
    private final String title;
    private final int defaultSize;
    private final int defaultIters;
    private final int defaultTxDepth;
    private final int defaultInline;

    PerfMode(String name, String perftestName, String title, int defaultSize, int defaultIters, int defaultTxDepth,
             int defaultInline) {
        this.name = name;
        this.perftestName = perftestName;
        this.title = title;
        this.defaultSize = defaultSize;
        this.defaultIters = defaultIters;
        this.defaultTxDepth = defaultTxDepth;
        this.defaultInline = defaultInline;
    }

    public static PerfMode of(String name) {
        for (PerfMode m : values()) {
            if (m.name.equals(name)) {
                return m;
            }
        }
        throw new IllegalArgumentException("unknown test '" + name + "' (write_bw, send_lat or write_lat)");
    }

    public String modeName() {
        return name;
    }

    public String perftestName() {
        return perftestName;
    }

    public String title() {
        return title;
    }

    public boolean isBandwidth() {
        return this == WRITE_BW;
    }

    /** Whether the peer posts receives (send/recv); RDMA writes need none. */
    public boolean usesReceives() {
        return this == SEND_LAT;
    }

    int defaultSize() {
        return defaultSize;
    }

    int defaultIters() {
        return defaultIters;
    }

    int defaultTxDepth() {
        return defaultTxDepth;
    }

    /**
     * perftest's inline default: latency tests on a NIC it recognises copy small payloads into
     * the WQE; for devices it does not know (Soft-RoCE rxe, siw) and for bandwidth tests it
     * turns inline off.
     */
    int defaultInline(String deviceName) {
        boolean unknownToPerftest = deviceName.startsWith("rxe") || deviceName.startsWith("siw");
        return unknownToPerftest ? 0 : defaultInline;
    }
}
