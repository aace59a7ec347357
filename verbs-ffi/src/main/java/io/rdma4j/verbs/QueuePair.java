package io.rdma4j.verbs;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.nativesupport.internal.Checks;
import io.rdma4j.nativesupport.internal.NativeCalls;
import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.ibv_qp;
import io.rdma4j.verbs.ffi.ibv_qp_attr;
import io.rdma4j.verbs.ffi.ibv_qp_cap;
import io.rdma4j.verbs.ffi.ibv_qp_init_attr;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.ADDRESS;

/**
 * A queue pair. Its connection set-up is the verbs state machine as explicit steps,
 * RESET -> {@link #init} -> {@link #rtr} -> {@link #rts}; each step checks the current state
 * before any native call and names the step that is missing. Posting goes through the provider's
 * post_send/post_recv, one call per {@link SendWorkRequests} batch.
 */
public final class QueuePair extends NativeResource {
    /** The ibv_modify_qp call; a seam so that the transitions can be checked without a device. */
    @FunctionalInterface
    interface Modifier {
        /** Returns 0 or an errno value, as ibv_modify_qp does. */
        int modify(MemorySegment attr, int attrMask);
    }

    /** How the QP is destroyed: ibv_destroy_qp, or rdma_destroy_qp for a QP an rdma_cm id owns. */
    @FunctionalInterface
    interface Destroyer {
        /** Returns 0 or an errno value. */
        int destroy();
    }

    private final QpType type;
    private final int qpNumber;
    private final QpCapabilities capabilities;
    private final DataPathOps ops;
    private final Modifier modifier;
    private final Destroyer destroyer;
    /** The handle that posts pass, and the bad_wr out-pointer beside it: both revoked on close. */
    private final ScopedHandle scoped;
    private final MemorySegment badWr;
    private volatile QpState state = QpState.RESET;

    QueuePair(String description, NativeResource[] parents, MemorySegment qp, QpType type, QpCapabilities capabilities,
              DataPathOps ops, Modifier modifier, Destroyer destroyer) {
        super(description, parents);
        this.type = type;
        this.qpNumber = ibv_qp.qp_num(qp);
        this.capabilities = capabilities;
        this.ops = ops;
        this.modifier = modifier;
        this.destroyer = destroyer;
        this.scoped = new ScopedHandle(qp);
        this.badWr = scoped.allocate(ADDRESS);
    }

    static QueuePair create(ProtectionDomain pd, QpType type, CompletionQueue sendCq, CompletionQueue recvCq,
                            QpCapabilities caps) {
        try (CallLease cqs = new CallLease("ibv_create_qp on " + pd.description(), sendCq, recvCq);
             Arena arena = Arena.ofConfined()) {
            MemorySegment init = initAttributes(arena, type, sendCq, recvCq, caps);
            MemorySegment cap = ibv_qp_init_attr.cap(init);
            MemorySegment errno = Downcalls.captureState(arena);
            String where = pd.context().name();
            MemorySegment qp = (MemorySegment) IbvCalls.CREATE_QP.invokeExact(errno, pd.segment(), init);
            qp = Results.checkPointer(qp, errno, "ibv_create_qp(" + type + " on " + where + ", " + caps + ")",
                    ibv_qp.sizeof());
            return Results.own(qp, Verbs::ibv_destroy_qp, created -> new QueuePair(
                    type + " QueuePair " + ibv_qp.qp_num(created) + " on " + where,
                    new NativeResource[]{pd, sendCq, recvCq}, created, type,
                    capabilitiesOf(cap), pd.context().dataPath(),
                    (attr, mask) -> Verbs.ibv_modify_qp(created, attr, mask), () -> Verbs.ibv_destroy_qp(created)));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /**
     * The {@code ibv_qp_init_attr} of a new QP (ibv_create_qp, rdma_create_qp), in {@code arena};
     * its {@code cap} holds what the provider granted once the creation returned.
     */
    static MemorySegment initAttributes(Arena arena, QpType type, CompletionQueue sendCq, CompletionQueue recvCq,
                                        QpCapabilities caps) {
        MemorySegment init = ibv_qp_init_attr.allocate(arena);
        init.fill((byte) 0);
        ibv_qp_init_attr.send_cq(init, sendCq.segment());
        ibv_qp_init_attr.recv_cq(init, recvCq.segment());
        ibv_qp_init_attr.qp_type(init, type.code());
        MemorySegment cap = ibv_qp_init_attr.cap(init);
        ibv_qp_cap.max_send_wr(cap, caps.maxSendWr());
        ibv_qp_cap.max_recv_wr(cap, caps.maxRecvWr());
        ibv_qp_cap.max_send_sge(cap, caps.maxSendSge());
        ibv_qp_cap.max_recv_sge(cap, caps.maxRecvSge());
        ibv_qp_cap.max_inline_data(cap, caps.maxInlineData());
        return init;
    }

    /** What an {@code ibv_qp_cap} says. */
    static QpCapabilities capabilitiesOf(MemorySegment cap) {
        return new QpCapabilities(ibv_qp_cap.max_send_wr(cap), ibv_qp_cap.max_recv_wr(cap),
                ibv_qp_cap.max_send_sge(cap), ibv_qp_cap.max_recv_sge(cap), ibv_qp_cap.max_inline_data(cap));
    }

    public int qpNumber() {
        return qpNumber;
    }

    public QpType type() {
        return type;
    }

    /** The state rdma4j last moved the QP to (see {@link #queryState} for the device's view). */
    public QpState state() {
        return state;
    }

    /** What the provider granted on creation. */
    public QpCapabilities capabilities() {
        return capabilities;
    }

    /** This QP's half of the out-of-band exchange for an RC connection. */
    public QpEndpoint endpoint(int psn, int lid, Gid gid) {
        return new QpEndpoint(qpNumber, psn, lid, gid);
    }

    // ---- state machine ------------------------------------------------------------------

    /** RC: RESET -> INIT with the port, partition and the remote access the QP grants. */
    public synchronized QueuePair init(RcParams p) {
        require(QpType.RC, "init(RcParams)");
        require(QpState.RESET, QpState.INIT, "create a new QP or reset() this one");
        transition(QpState.INIT, Verbs.IBV_QP_PKEY_INDEX() | Verbs.IBV_QP_PORT() | Verbs.IBV_QP_ACCESS_FLAGS(), a -> {
            ibv_qp_attr.pkey_index(a, (short) p.pkeyIndex());
            ibv_qp_attr.port_num(a, (byte) p.port());
            ibv_qp_attr.qp_access_flags(a, p.accessFlags());
        });
        return this;
    }

    /** UD: RESET -> INIT with the port, partition and the Q_Key datagrams must carry. */
    public synchronized QueuePair initUd(int port, int pkeyIndex, int qkey) {
        require(QpType.UD, "initUd");
        Checks.inRange("port", port, 1, 255);
        Checks.inRange("pkeyIndex", pkeyIndex, 0, 0xffff);
        require(QpState.RESET, QpState.INIT, "create a new QP or reset() this one");
        transition(QpState.INIT, Verbs.IBV_QP_PKEY_INDEX() | Verbs.IBV_QP_PORT() | Verbs.IBV_QP_QKEY(), a -> {
            ibv_qp_attr.pkey_index(a, (short) pkeyIndex);
            ibv_qp_attr.port_num(a, (byte) port);
            ibv_qp_attr.qkey(a, qkey);
        });
        return this;
    }

    /** RC: INIT -> RTR (ready to receive) towards {@code remote}. */
    public synchronized QueuePair rtr(RcParams p, QpEndpoint remote) {
        require(QpType.RC, "rtr(RcParams, QpEndpoint)");
        require(QpState.INIT, QpState.READY_TO_RECEIVE, "call init(...) first");
        int mask = Verbs.IBV_QP_AV() | Verbs.IBV_QP_PATH_MTU() | Verbs.IBV_QP_DEST_QPN() | Verbs.IBV_QP_RQ_PSN()
                | Verbs.IBV_QP_MAX_DEST_RD_ATOMIC() | Verbs.IBV_QP_MIN_RNR_TIMER();
        if (remote.gid() == null && p.usesGlobalRoute()) {
            throw new IllegalArgumentException("RcParams.gidIndex is " + p.gidIndex()
                    + " but the remote endpoint has no GID to route to");
        }
        transition(QpState.READY_TO_RECEIVE, mask, a -> {
            ibv_qp_attr.path_mtu(a, p.mtu().code());
            ibv_qp_attr.dest_qp_num(a, remote.qpNumber());
            ibv_qp_attr.rq_psn(a, remote.psn());
            ibv_qp_attr.max_dest_rd_atomic(a, (byte) p.maxDestRdAtomic());
            ibv_qp_attr.min_rnr_timer(a, (byte) p.minRnrTimer());
            AddressVector.fill(ibv_qp_attr.ah_attr(a), p.port(), remote.lid(), remote.gid(), p.gidIndex(),
                    p.hopLimit(), p.trafficClass(), p.serviceLevel());
        });
        return this;
    }

    /** UD: INIT -> RTR (nothing to configure for datagrams). */
    public synchronized QueuePair rtrUd() {
        require(QpType.UD, "rtrUd");
        require(QpState.INIT, QpState.READY_TO_RECEIVE, "call initUd(...) first");
        transition(QpState.READY_TO_RECEIVE, 0, a -> { });
        return this;
    }

    /** RC: RTR -> RTS (ready to send) with this side's first PSN and the retry/timeout knobs. */
    public synchronized QueuePair rts(RcParams p, int sendPsn) {
        require(QpType.RC, "rts(RcParams, int)");
        Checks.inRange("sendPsn", sendPsn, 0, QpEndpoint.MAX_24_BIT);
        require(QpState.READY_TO_RECEIVE, QpState.READY_TO_SEND, "call rtr(...) first");
        int mask = Verbs.IBV_QP_TIMEOUT() | Verbs.IBV_QP_RETRY_CNT() | Verbs.IBV_QP_RNR_RETRY()
                | Verbs.IBV_QP_SQ_PSN() | Verbs.IBV_QP_MAX_QP_RD_ATOMIC();
        transition(QpState.READY_TO_SEND, mask, a -> {
            ibv_qp_attr.timeout(a, (byte) p.timeout());
            ibv_qp_attr.retry_cnt(a, (byte) p.retryCount());
            ibv_qp_attr.rnr_retry(a, (byte) p.rnrRetry());
            ibv_qp_attr.sq_psn(a, sendPsn);
            ibv_qp_attr.max_rd_atomic(a, (byte) p.maxRdAtomic());
        });
        return this;
    }

    /** UD: RTR -> RTS with the first PSN. */
    public synchronized QueuePair rtsUd(int sendPsn) {
        require(QpType.UD, "rtsUd");
        Checks.inRange("sendPsn", sendPsn, 0, QpEndpoint.MAX_24_BIT);
        require(QpState.READY_TO_RECEIVE, QpState.READY_TO_SEND, "call rtrUd() first");
        transition(QpState.READY_TO_SEND, Verbs.IBV_QP_SQ_PSN(), a -> ibv_qp_attr.sq_psn(a, sendPsn));
        return this;
    }

    /** RC: RESET -> INIT -> RTR -> RTS in one call. */
    public QueuePair connect(RcParams p, int sendPsn, QpEndpoint remote) {
        return init(p).rtr(p, remote).rts(p, sendPsn);
    }

    /** Moves the QP to ERROR from any state: outstanding requests complete with WR_FLUSH_ERR. */
    public synchronized void toError() {
        transition(QpState.ERROR, 0, a -> { });
    }

    /** Moves the QP back to RESET from any state, e.g. to reconnect it after an error. */
    public synchronized void reset() {
        transition(QpState.RESET, 0, a -> { });
    }

    /**
     * The state the device reports (ibv_query_qp). A failed work request moves an RC QP to
     * ERROR on its own; this reads that, and updates {@link #state()}.
     */
    public synchronized QpState queryState() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = ibv_qp_attr.allocate(a);
            MemorySegment init = ibv_qp_init_attr.allocate(a);
            Results.checkReturn(Verbs.ibv_query_qp(segment(), attr, Verbs.IBV_QP_STATE(), init),
                    "ibv_query_qp(" + description() + ")");
            state = QpState.of(ibv_qp_attr.qp_state(attr));
            return state;
        }
    }

    /** For QPs whose transitions rdma_cm performs (see io.rdma4j.verbs.cm). */
    void assumeState(QpState s) {
        state = s;
    }

    private void require(QpType required, String step) {
        if (type != required) {
            throw new IllegalStateException(step + " is for " + required + " queue pairs; " + description()
                    + " is " + type);
        }
    }

    private void require(QpState current, QpState target, String hint) {
        ensureOpen();
        if (state != current) {
            throw new IllegalStateException(description() + " is in state " + state + "; the transition to " + target
                    + " requires state " + current + " (" + hint + ")");
        }
    }

    private interface AttrFiller {
        void fill(MemorySegment attr);
    }

    private void transition(QpState target, int extraMask, AttrFiller filler) {
        ensureOpen();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = ibv_qp_attr.allocate(a);
            attr.fill((byte) 0);
            ibv_qp_attr.qp_state(attr, target.code());
            filler.fill(attr);
            int rc = modifier.modify(attr, Verbs.IBV_QP_STATE() | extraMask);
            Results.checkReturn(rc, "ibv_modify_qp(" + description() + ", " + state + " -> " + target + ")");
            state = target;
        }
    }

    // ---- data path ----------------------------------------------------------------------

    /**
     * Posts the whole batch with one post_send call (one doorbell). The batch stays as it is,
     * so the same requests can be posted again; {@link SendWorkRequests#reset()} starts a new one.
     */
    public void postSend(SendWorkRequests wrs) {
        requirePostable(QpState.READY_TO_SEND, "post_send");
        if (type == QpType.UD) {
            wrs.checkUdDestinations(description());
        }
        MemorySegment head = wrs.terminate();
        int rc;
        try {
            rc = (int) ops.postSend.invokeExact(scoped.segment(), head, badWr);
        } catch (Throwable t) {
            throw scoped.rethrow(t, description());
        } finally {
            wrs.relink();
        }
        if (rc != 0) {
            throw postFailure("post_send", rc, wrs, inlineOverflow(wrs, capabilities.maxInlineData()));
        }
    }

    /** Posts the whole batch of receive requests with one post_recv call. */
    public void postRecv(RecvWorkRequests wrs) {
        requirePostable(QpState.INIT, "post_recv");
        MemorySegment head = wrs.terminate();
        int rc;
        try {
            rc = (int) ops.postRecv.invokeExact(scoped.segment(), head, badWr);
        } catch (Throwable t) {
            throw scoped.rethrow(t, description());
        } finally {
            wrs.relink();
        }
        if (rc != 0) {
            throw postFailure("post_recv", rc, wrs, "");
        }
    }

    /** Sends need RTS; receives may be posted from INIT on (so they are ready when the peer starts). */
    private void requirePostable(QpState minimum, String op) {
        ensureOpen();
        QpState s = state;
        boolean ok = minimum == QpState.READY_TO_SEND
                ? s == QpState.READY_TO_SEND || s == QpState.SEND_QUEUE_DRAINED || s == QpState.ERROR
                : s != QpState.RESET;
        if (!ok) {
            throw new IllegalStateException(op + " on " + description() + " in state " + s + " needs state "
                    + minimum + " or later");
        }
    }

    /**
     * @param inlineOverflow what {@link #inlineOverflow} found, which a provider reports as ENOMEM
     *                       (mlx5) or EINVAL (rxe), as it reports other faults
     */
    private VerbsException postFailure(String op, int rc, WorkRequestChain wrs, String inlineOverflow) {
        int bad;
        try {
            bad = wrs.indexOf(badWr.get(ADDRESS, 0).address());
        } catch (IllegalStateException closedSinceThePost) { // bad_wr went with the QP's handle
            bad = -1;
        }
        String which = bad < 0 ? "" : " at work request " + bad + " of " + wrs.count() + " (wr_id " + wrs.wrId(bad) + ")";
        String hint = !inlineOverflow.isEmpty() ? " (" + inlineOverflow + ")"
                : Math.abs(rc) == Verbs.ENOMEM() ? " (more outstanding requests than the queue holds)" : "";
        return new VerbsException(op + " on " + description() + which + hint, Math.abs(rc));
    }

    /**
     * The first request of the batch that asks for an inline payload larger than the queue
     * pair's {@code max_inline_data}, described; empty if none. Only read after a failed post:
     * the data path does not pay for the check.
     */
    static String inlineOverflow(SendWorkRequests wrs, int maxInlineData) {
        for (int wr = 0; wr < wrs.count(); wr++) {
            long bytes = wrs.payloadBytes(wr);
            if ((wrs.flags(wr) & SendFlags.INLINE) != 0 && bytes > maxInlineData) {
                return "work request " + wr + " sends " + bytes + " bytes inline, more than the " + maxInlineData
                        + " bytes of inline data the queue pair was created with";
            }
        }
        return "";
    }

    MemorySegment segment() {
        ensureOpen();
        return scoped.segment();
    }

    /** A close while another thread posts is refused rather than destroying the QP under the post. */
    @Override
    protected void revokeAccess() {
        scoped.revoke(description());
    }

    @Override
    protected void release() {
        Results.checkReturn(destroyer.destroy(), "destroying " + description());
    }
}
