package io.rdma4j.verbs;

import io.rdma4j.verbs.testing.SoftRoce;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Two RC queue pairs connected RESET -> RTS over real devices (rxe0 and rxe1 in the Soft-RoCE
 * guest, or both ends on one device), each with a registered buffer, for the integration tests.
 */
final class RcPair implements AutoCloseable {
    static final long POLL_TIMEOUT_NANOS = 10_000_000_000L;

    /** One end: device, PD, CQ, QP and a registered buffer. */
    static final class Side implements AutoCloseable {
        final DeviceContext ctx;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final QueuePair qp;
        final Arena arena = Arena.ofShared();
        final MemorySegment buf;
        final MemoryRegion mr;
        final GidEntry gid;
        final WorkCompletions wcs = new WorkCompletions(16);

        Side(String device, long bufferBytes, int depth) {
            ctx = RdmaDevices.open(device);
            pd = ctx.allocateProtectionDomain();
            cq = ctx.createCompletionQueue(2 * depth);
            qp = pd.createQueuePair(QpType.RC, cq, cq, new QpCapabilities(depth, depth, 2, 2, 64));
            buf = arena.allocate(bufferBytes, 4096);
            mr = pd.register(buf, Access.ALL_REMOTE);
            gid = ctx.preferredGid(1);
        }

        RcParams params() {
            return RcParams.builder().gidIndex(gid.index()).mtu(Mtu.MTU_1024).maxRdAtomic(4).maxDestRdAtomic(4).build();
        }

        /** Polls until {@code n} completions arrived (or fails naming what is missing after 10 s). */
        void await(int n, String what) {
            long deadline = System.nanoTime() + POLL_TIMEOUT_NANOS;
            int seen = 0;
            while (seen < n) {
                int got = cq.poll(wcs);
                for (int i = 0; i < got; i++) {
                    wcs.checkSuccess(i, what);
                }
                seen += got;
                if (seen < n && System.nanoTime() > deadline) {
                    fail("timed out after 10 s waiting for " + what + ": " + seen + " of " + n + " completions on "
                            + ctx.name());
                }
            }
        }

        /** Polls one completion, whatever its status. */
        int pollOne(String what) {
            long deadline = System.nanoTime() + POLL_TIMEOUT_NANOS;
            int got;
            while ((got = cq.poll(wcs)) == 0) {
                if (System.nanoTime() > deadline) {
                    fail("timed out after 10 s waiting for " + what + " on " + ctx.name());
                }
            }
            assertEquals(1, got);
            return got;
        }

        @Override
        public void close() {
            wcs.close();
            qp.close();
            mr.close();
            cq.close();
            pd.close();
            ctx.close();
            assertTrue(ctx.isReleased(), "still open on " + ctx.description() + ": " + ctx.pendingChildren());
            arena.close();
        }
    }

    final Side a;
    final Side b;

    RcPair(long bufferBytes, int depth) {
        List<String> devices = SoftRoce.requireDeviceOrSkip();
        String second = devices.size() > 1 ? devices.get(1) : devices.get(0);
        a = new Side(devices.get(0), bufferBytes, depth);
        b = new Side(second, bufferBytes, depth);
        int psnA = 0x1111, psnB = 0x2222;
        a.qp.connect(a.params(), psnA, b.qp.endpoint(psnB, 0, b.gid.gid()));
        b.qp.connect(b.params(), psnB, a.qp.endpoint(psnA, 0, a.gid.gid()));
        assertEquals(QpState.READY_TO_SEND, a.qp.queryState());
        assertEquals(QpState.READY_TO_SEND, b.qp.queryState());
        assertTrue(a.gid.type() == GidType.ROCE_V2 && a.gid.gid().isIpv4Mapped(), "RoCE v2 IPv4 GID: " + a.gid);
    }

    @Override
    public void close() {
        a.close();
        b.close();
    }
}
