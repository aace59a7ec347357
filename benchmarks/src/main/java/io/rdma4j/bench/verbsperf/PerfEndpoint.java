package io.rdma4j.bench.verbsperf;

import io.rdma4j.verbs.Access;
import io.rdma4j.verbs.CompletionQueue;
import io.rdma4j.verbs.DeviceContext;
import io.rdma4j.verbs.GidEntry;
import io.rdma4j.verbs.MemoryRegion;
import io.rdma4j.verbs.Mtu;
import io.rdma4j.verbs.PortAttributes;
import io.rdma4j.verbs.ProtectionDomain;
import io.rdma4j.verbs.QpCapabilities;
import io.rdma4j.verbs.QpType;
import io.rdma4j.verbs.QueuePair;
import io.rdma4j.verbs.RcParams;
import io.rdma4j.verbs.RdmaDevices;
import io.rdma4j.verbs.VerbsException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One side's verbs objects for a test: device, PD, send and receive CQs, an RC QP and one
 * registered buffer of two halves (perftest's layout): the first half is what this side sends
 * from, the second half is where the peer's RDMA writes land.
 */
final class PerfEndpoint implements AutoCloseable {
    /** perftest's cycle buffer (a page) and cache line: small messages walk through one page. */
    static final int CYCLE_BUFFER = 4096;
    static final int CACHE_LINE = 64;

    final DeviceContext ctx;
    final ProtectionDomain pd;
    final CompletionQueue sendCq;
    final CompletionQueue recvCq;
    final QueuePair qp;
    final Arena arena = Arena.ofShared();
    final MemorySegment buf;
    final MemoryRegion mr;
    final long half;
    final int inlineSize;
    final int gidIndex;
    final PortAttributes port;
    final Mtu localMtu;
    private final int psn = ThreadLocalRandom.current().nextInt(1 << 24);
    private final PerfParams params;

    PerfEndpoint(PerfParams p) {
        params = p;
        ctx = RdmaDevices.open(p.device);
        try {
            port = ctx.queryPort(p.ibPort);
            if (!port.isActive()) {
                throw new VerbsException("port " + p.ibPort + " of " + ctx.name() + " is " + port.stateName()
                        + ", not ACTIVE");
            }
            gidIndex = p.gidIndex >= 0 ? p.gidIndex
                    : port.isEthernet() ? ctx.preferredGid(p.ibPort).index() : -1;
            localMtu = p.mtu != null ? p.mtu : port.activeMtu();
            inlineSize = p.inlineSize(ctx.name());
            pd = ctx.allocateProtectionDomain();
            sendCq = ctx.createCompletionQueue(p.txDepth);
            recvCq = ctx.createCompletionQueue(p.rxDepth);
            qp = pd.createQueuePair(QpType.RC, sendCq, recvCq,
                    new QpCapabilities(p.txDepth, p.rxDepth, 1, 1, inlineSize));
            half = align(Math.max(p.maxSize(), CYCLE_BUFFER), CYCLE_BUFFER);
            buf = arena.allocate(2 * half, CYCLE_BUFFER);
            mr = pd.register(buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    private static long align(long v, long to) {
        return (v + to - 1) / to * to;
    }

    /** perftest's INC(size, cache_line): the stride between messages that walk through a page. */
    static int stride(int size) {
        return size <= CACHE_LINE ? CACHE_LINE : (int) align(size, CACHE_LINE);
    }

    /** Whether messages of {@code size} walk through the cycle buffer (perftest does so up to half a page). */
    static boolean cycles(int size) {
        return size <= CYCLE_BUFFER / 2;
    }

    PeerInfo info() {
        var gid = gidIndex >= 0 ? ctx.gidTable(params.ibPort).stream().filter(e -> e.index() == gidIndex)
                .map(GidEntry::gid).findFirst()
                .orElseThrow(() -> new VerbsException("port " + params.ibPort + " of " + ctx.name()
                        + " has no GID at index " + gidIndex)) : null;
        return new PeerInfo(port.lid(), qp.qpNumber(), psn, gid, mr.rkey(), mr.address() + half, localMtu.bytes(),
                params.fingerprint());
    }

    /** RESET -> INIT -> RTR -> RTS towards {@code remote}, on the smaller of both sides' MTUs. */
    Mtu connect(PeerInfo remote) {
        Mtu mtu = localMtu;
        for (Mtu m : Mtu.values()) {
            if (m.bytes() == Math.min(localMtu.bytes(), remote.mtuBytes())) {
                mtu = m;
            }
        }
        RcParams rc = RcParams.builder().port(params.ibPort).gidIndex(gidIndex).mtu(mtu)
                .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ).build();
        qp.connect(rc, psn, remote.endpoint());
        return mtu;
    }

    /**
     * Destroys the QP before the memory it may still write, deregisters the memory before it is
     * freed; each verbs object frees its handle once the ones made on it are gone. Safe after a
     * constructor that failed part-way (the fields it did not reach are null).
     */
    @Override
    public void close() {
        for (AutoCloseable c : new AutoCloseable[] {qp, mr, sendCq, recvCq, pd, ctx}) {
            if (c != null) {
                try {
                    c.close();
                } catch (Exception e) {
                    throw new IllegalStateException("verbs-perf: closing its endpoint failed", e);
                }
            }
        }
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
