package io.rdma4j.verbs;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.nativesupport.ResourceClosedException;
import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.ibv_ah_attr;
import io.rdma4j.verbs.ffi.ibv_gid;
import io.rdma4j.verbs.ffi.ibv_global_route;
import io.rdma4j.verbs.ffi.ibv_qp;
import io.rdma4j.verbs.ffi.ibv_qp_attr;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

/**
 * The QP state machine without a device: a QueuePair over a zeroed ibv_qp whose ibv_modify_qp is
 * replaced by a recorder. Checks that wrong orders fail before any native call, and that each
 * step passes the attribute mask and ibv_qp_attr fields the verbs spec requires.
 */
class QueuePairStateTest {
    /** One recorded ibv_modify_qp call: the mask and a copy of the attr struct. */
    record Call(int mask, MemorySegment attrSegment) {
    }

    private final Arena arena = Arena.ofConfined();
    private final List<Call> calls = new ArrayList<>();
    private int nextRc = 0;

    private QueuePair qp(QpType type) {
        MemorySegment fake = arena.allocate(ibv_qp.layout());
        ibv_qp.qp_num(fake, 0x1234);
        return new QueuePair(type + " QueuePair 4660 (test)", new NativeResource[0], fake, type, new QpCapabilities(16, 16, 1, 1, 0), null,
                (attr, mask) -> {
                    calls.add(new Call(mask, arena.allocate(ibv_qp_attr.layout()).copyFrom(attr)));
                    return nextRc;
                }, () -> 0);
    }

    @AfterEach
    void close() {
        arena.close();
    }

    private static final Gid REMOTE_GID = new Gid(new byte[]{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff,
            (byte) 198, 18, 0, 2});
    private static final RcParams PARAMS = RcParams.builder().port(1).gidIndex(3).mtu(Mtu.MTU_4096).timeout(18)
            .retryCount(6).rnrRetry(5).minRnrTimer(11).serviceLevel(2).trafficClass(106).hopLimit(9)
            .maxRdAtomic(4).maxDestRdAtomic(8).accessFlags(Access.ALL_REMOTE).build();

    @Test
    void rtrBeforeInitFailsWithoutTouchingTheDevice() {
        QueuePair qp = qp(QpType.RC);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> qp.rtr(PARAMS, QpEndpoint.roce(7, 100, REMOTE_GID)));
        assertEquals("RC QueuePair 4660 (test) is in state RESET; the transition to READY_TO_RECEIVE requires state INIT"
                + " (call init(...) first)", e.getMessage());
        assertTrue(calls.isEmpty(), "no ibv_modify_qp call");
        assertEquals(QpState.RESET, qp.state());
    }

    @Test
    void rtsBeforeRtrAndInitTwiceAreRejected() {
        QueuePair qp = qp(QpType.RC);
        qp.init(PARAMS);
        IllegalStateException rts = assertThrows(IllegalStateException.class, () -> qp.rts(PARAMS, 5));
        assertTrue(rts.getMessage().contains("is in state INIT") && rts.getMessage().contains("requires state READY_TO_RECEIVE"),
                rts.getMessage());
        IllegalStateException again = assertThrows(IllegalStateException.class, () -> qp.init(PARAMS));
        assertTrue(again.getMessage().contains("requires state RESET"), again.getMessage());
        assertEquals(1, calls.size());
    }

    @Test
    void fullRcSequencePassesTheSpecifiedMasksAndAttributes() {
        QueuePair qp = qp(QpType.RC);
        qp.connect(PARAMS, 0xabcde, QpEndpoint.roce(0x77, 0x12345, REMOTE_GID));
        assertEquals(QpState.READY_TO_SEND, qp.state());
        assertEquals(3, calls.size());

        Call init = calls.get(0);
        assertEquals(Verbs.IBV_QP_STATE() | Verbs.IBV_QP_PKEY_INDEX() | Verbs.IBV_QP_PORT() | Verbs.IBV_QP_ACCESS_FLAGS(),
                init.mask());
        MemorySegment a = init.attrSegment();
        assertEquals(Verbs.IBV_QPS_INIT(), ibv_qp_attr.qp_state(a));
        assertEquals(1, ibv_qp_attr.port_num(a));
        assertEquals(Access.ALL_REMOTE, ibv_qp_attr.qp_access_flags(a));

        Call rtr = calls.get(1);
        assertEquals(Verbs.IBV_QP_STATE() | Verbs.IBV_QP_AV() | Verbs.IBV_QP_PATH_MTU() | Verbs.IBV_QP_DEST_QPN()
                | Verbs.IBV_QP_RQ_PSN() | Verbs.IBV_QP_MAX_DEST_RD_ATOMIC() | Verbs.IBV_QP_MIN_RNR_TIMER(), rtr.mask());
        a = rtr.attrSegment();
        assertEquals(Verbs.IBV_QPS_RTR(), ibv_qp_attr.qp_state(a));
        assertEquals(Verbs.IBV_MTU_4096(), ibv_qp_attr.path_mtu(a));
        assertEquals(0x77, ibv_qp_attr.dest_qp_num(a));
        assertEquals(0x12345, ibv_qp_attr.rq_psn(a));
        assertEquals(8, ibv_qp_attr.max_dest_rd_atomic(a));
        assertEquals(11, ibv_qp_attr.min_rnr_timer(a));
        MemorySegment ah = ibv_qp_attr.ah_attr(a);
        assertEquals(1, ibv_ah_attr.is_global(ah));
        assertEquals(2, ibv_ah_attr.sl(ah));
        assertEquals(1, ibv_ah_attr.port_num(ah));
        MemorySegment grh = ibv_ah_attr.grh(ah);
        assertEquals(3, ibv_global_route.sgid_index(grh));
        assertEquals(9, ibv_global_route.hop_limit(grh));
        assertEquals(106, ibv_global_route.traffic_class(grh));
        assertArrayEquals(REMOTE_GID.raw(), ibv_gid.raw(ibv_global_route.dgid(grh)).toArray(JAVA_BYTE));

        Call rts = calls.get(2);
        assertEquals(Verbs.IBV_QP_STATE() | Verbs.IBV_QP_TIMEOUT() | Verbs.IBV_QP_RETRY_CNT() | Verbs.IBV_QP_RNR_RETRY()
                | Verbs.IBV_QP_SQ_PSN() | Verbs.IBV_QP_MAX_QP_RD_ATOMIC(), rts.mask());
        a = rts.attrSegment();
        assertEquals(Verbs.IBV_QPS_RTS(), ibv_qp_attr.qp_state(a));
        assertEquals(18, ibv_qp_attr.timeout(a));
        assertEquals(6, ibv_qp_attr.retry_cnt(a));
        assertEquals(5, ibv_qp_attr.rnr_retry(a));
        assertEquals(0xabcde, ibv_qp_attr.sq_psn(a));
        assertEquals(4, ibv_qp_attr.max_rd_atomic(a));
    }

    @Test
    void infinibandPeerWithoutGidIsLidRouted() {
        QueuePair qp = qp(QpType.RC);
        RcParams ib = PARAMS.toBuilder().gidIndex(-1).build();
        qp.init(ib).rtr(ib, new QpEndpoint(5, 6, 0x42, null));
        MemorySegment ah = ibv_qp_attr.ah_attr(calls.get(1).attrSegment());
        assertEquals(0, ibv_ah_attr.is_global(ah));
        assertEquals(0x42, ibv_ah_attr.dlid(ah));
    }

    @Test
    void gidPeerWithoutSourceGidIndexIsRejectedBeforeModify() {
        QueuePair qp = qp(QpType.RC);
        RcParams noGid = PARAMS.toBuilder().gidIndex(-1).build();
        qp.init(noGid);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> qp.rtr(noGid, QpEndpoint.roce(1, 1, REMOTE_GID)));
        assertTrue(e.getMessage().contains("no source GID index"), e.getMessage());
        assertEquals(QpState.INIT, qp.state());
        assertEquals(1, calls.size());
    }

    @Test
    void failedModifyKeepsTheStateAndReportsTheErrno() {
        QueuePair qp = qp(QpType.RC);
        nextRc = 22;
        VerbsException e = assertThrows(VerbsException.class, () -> qp.init(PARAMS));
        assertEquals(22, e.errno());
        assertTrue(e.getMessage().contains("RESET -> INIT") && e.getMessage().contains("EINVAL"), e.getMessage());
        assertEquals(QpState.RESET, qp.state());
    }

    @Test
    void udStepsAreSeparateFromRcSteps() {
        QueuePair ud = qp(QpType.UD);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> ud.init(PARAMS));
        assertTrue(e.getMessage().contains("is for RC queue pairs"), e.getMessage());
        ud.initUd(1, 0, 0x11111111).rtrUd().rtsUd(9);
        assertEquals(QpState.READY_TO_SEND, ud.state());
        assertEquals(Verbs.IBV_QP_STATE() | Verbs.IBV_QP_PKEY_INDEX() | Verbs.IBV_QP_PORT() | Verbs.IBV_QP_QKEY(),
                calls.get(0).mask());
        assertEquals(0x11111111, ibv_qp_attr.qkey(calls.get(0).attrSegment()));
        assertEquals(Verbs.IBV_QP_STATE(), calls.get(1).mask());
        assertEquals(Verbs.IBV_QP_STATE() | Verbs.IBV_QP_SQ_PSN(), calls.get(2).mask());
        assertThrows(IllegalStateException.class, () -> qp(QpType.RC).initUd(1, 0, 1));
    }

    /**
     * A UD send without a destination is refused before the provider sees it (it would
     * dereference the null {@code ibv_ah}: a crash); the fake QP has no provider ops, so reaching
     * post_send would throw a NullPointerException instead.
     */
    @Test
    void aUdSendWithoutADestinationIsRefusedBeforeThePost() {
        QueuePair ud = qp(QpType.UD);
        ud.initUd(1, 0, 0x11111111).rtrUd().rtsUd(9);
        try (SendWorkRequests s = new SendWorkRequests(4, 1)) {
            s.add(1, SendOpcode.SEND, SendFlags.SIGNALED);
            s.add(2, SendOpcode.SEND, SendFlags.SIGNALED);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> ud.postSend(s));
            assertTrue(e.getMessage().contains("work request 0") && e.getMessage().contains("setUd"), e.getMessage());
        }
    }

    /**
     * A failed post names the request whose inline payload exceeds the QP's max_inline_data
     * (providers report it as ENOMEM or EINVAL, as they report a full queue or a bad argument).
     */
    @Test
    void aFailedPostNamesTheRequestWhoseInlinePayloadIsTooLarge() {
        try (SendWorkRequests s = new SendWorkRequests(4, 2)) {
            s.addSge(s.add(1, SendOpcode.SEND, SendFlags.SIGNALED), 0x1000, 500, 7);
            int big = s.add(2, SendOpcode.SEND, SendFlags.SIGNALED | SendFlags.INLINE);
            s.addSge(big, 0x2000, 40, 0);
            s.addSge(big, 0x3000, 60, 0);
            assertEquals(100, s.payloadBytes(big));
            assertEquals("work request 1 sends 100 bytes inline, more than the 64 bytes of inline data the queue pair"
                    + " was created with", QueuePair.inlineOverflow(s, 64));
            assertEquals("", QueuePair.inlineOverflow(s, 100));
        }
    }

    @Test
    void errorAndResetAreReachableFromAnyStateAndAllowReconnecting() {
        QueuePair qp = qp(QpType.RC);
        qp.init(PARAMS);
        qp.toError();
        assertEquals(QpState.ERROR, qp.state());
        qp.reset();
        assertEquals(QpState.RESET, qp.state());
        qp.init(PARAMS);
        assertEquals(Verbs.IBV_QPS_ERR(), ibv_qp_attr.qp_state(calls.get(1).attrSegment()));
        assertEquals(Verbs.IBV_QPS_RESET(), ibv_qp_attr.qp_state(calls.get(2).attrSegment()));
    }

    @Test
    void postingBeforeTheQpIsReadyFailsFastAndNamesTheState() {
        QueuePair qp = qp(QpType.RC);
        try (SendWorkRequests s = new SendWorkRequests(4, 1); RecvWorkRequests r = new RecvWorkRequests(4, 1)) {
            s.add(1, SendOpcode.SEND, SendFlags.SIGNALED);
            r.add(1);
            IllegalStateException send = assertThrows(IllegalStateException.class, () -> qp.postSend(s));
            assertTrue(send.getMessage().contains("in state RESET needs state READY_TO_SEND"), send.getMessage());
            IllegalStateException recv = assertThrows(IllegalStateException.class, () -> qp.postRecv(r));
            assertTrue(recv.getMessage().contains("needs state INIT"), recv.getMessage());
        }
    }

    @Test
    void aClosedQpNamesItselfAndIsIdempotentlyClosed() {
        QueuePair qp = qp(QpType.RC);
        qp.close();
        qp.close();
        ResourceClosedException e = assertThrows(ResourceClosedException.class, () -> qp.init(PARAMS));
        assertEquals("RC QueuePair 4660 (test) is closed", e.getMessage());
        assertTrue(calls.isEmpty());
    }

    @Test
    void qpNumberComesFromTheNativeStruct() {
        assertEquals(0x1234, qp(QpType.RC).qpNumber());
        assertEquals(new QpEndpoint(0x1234, 3, 0, REMOTE_GID), qp(QpType.RC).endpoint(3, 0, REMOTE_GID));
    }
}
