package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.ibv_send_wr;

import java.lang.foreign.ValueLayout;

/**
 * A reusable chain of {@code struct ibv_send_wr}, posted with one post_send call (one doorbell
 * for the whole batch):
 * <pre>{@code
 * wrs.reset();
 * int w = wrs.add(id, SendOpcode.RDMA_WRITE, SendFlags.SIGNALED);
 * wrs.addSge(w, mr, 0, 4096);
 * wrs.setRdma(w, remoteAddress, rkey);
 * qp.postSend(wrs);
 * }</pre>
 * Fields are patched in place at offsets taken from the generated layout; nothing is allocated.
 */
public final class SendWorkRequests extends WorkRequestChain {
    static final long OPCODE = ibv_send_wr.opcode$offset();
    static final long FLAGS = ibv_send_wr.send_flags$offset();
    static final long IMM = ibv_send_wr.imm_data$offset();
    static final long WR = ibv_send_wr.wr$offset();
    static final long RDMA_ADDR = WR + ibv_send_wr.wr.rdma$offset() + ibv_send_wr.wr.rdma.remote_addr$offset();
    static final long RDMA_RKEY = WR + ibv_send_wr.wr.rdma$offset() + ibv_send_wr.wr.rdma.rkey$offset();
    static final long ATOMIC = WR + ibv_send_wr.wr.atomic$offset();
    static final long ATOMIC_ADDR = ATOMIC + ibv_send_wr.wr.atomic.remote_addr$offset();
    static final long ATOMIC_COMPARE_ADD = ATOMIC + ibv_send_wr.wr.atomic.compare_add$offset();
    static final long ATOMIC_SWAP = ATOMIC + ibv_send_wr.wr.atomic.swap$offset();
    static final long ATOMIC_RKEY = ATOMIC + ibv_send_wr.wr.atomic.rkey$offset();
    static final long UD = WR + ibv_send_wr.wr.ud$offset();
    static final long UD_AH = UD + ibv_send_wr.wr.ud.ah$offset();
    static final long UD_QPN = UD + ibv_send_wr.wr.ud.remote_qpn$offset();
    static final long UD_QKEY = UD + ibv_send_wr.wr.ud.remote_qkey$offset();
    private static final ValueLayout.OfInt INT = ibv_send_wr.opcode$layout();
    private static final ValueLayout.OfLong LONG = ibv_send_wr.wr_id$layout();

    /**
     * Each request's UD destination: kept so that a post can check it is set and still open (the
     * provider dereferences the {@code ibv_ah} pointer: a missing or destroyed one would crash
     * the process) and so that the handle stays reachable while a kept batch may be posted again.
     */
    private final AddressHandle[] destinations;

    public SendWorkRequests(int capacity, int maxSge) {
        super("SendWorkRequests", capacity, maxSge, ibv_send_wr.layout(), ibv_send_wr.wr_id$offset(),
                ibv_send_wr.next$offset(), ibv_send_wr.next$layout(), ibv_send_wr.sg_list$offset(),
                ibv_send_wr.num_sge$offset(), ibv_send_wr.num_sge$layout());
        destinations = new AddressHandle[capacity];
    }

    /** Appends a request; returns its index. {@code flags} are {@link SendFlags} bits. */
    public int add(long wrId, SendOpcode opcode, int flags) {
        int i = append(wrId);
        destinations[i] = null;
        long base = offsetOf(i);
        wrs.set(INT, base + OPCODE, opcode.code());
        wrs.set(INT, base + FLAGS, flags);
        return i;
    }

    public void setFlags(int wr, int flags) {
        wrs.set(INT, offsetOf(wr) + FLAGS, flags);
    }

    public int flags(int wr) {
        return wrs.get(INT, offsetOf(wr) + FLAGS);
    }

    public void setOpcode(int wr, SendOpcode opcode) {
        wrs.set(INT, offsetOf(wr) + OPCODE, opcode.code());
    }

    /** Target of an RDMA write/read: the peer's region address (its iova) and rkey. */
    public void setRdma(int wr, long remoteAddress, int rkey) {
        long base = offsetOf(wr);
        wrs.set(LONG, base + RDMA_ADDR, remoteAddress);
        wrs.set(INT, base + RDMA_RKEY, rkey);
    }

    /**
     * Target and operands of an atomic: fetch-and-add adds {@code compareAdd}; compare-and-swap
     * writes {@code swap} if the 8 bytes at the (8-byte aligned) remote address equal {@code compareAdd}.
     */
    public void setAtomic(int wr, long remoteAddress, int rkey, long compareAdd, long swap) {
        if ((remoteAddress & 7) != 0) {
            throw new IllegalArgumentException("atomic remote address must be 8-byte aligned, got 0x"
                    + Long.toHexString(remoteAddress));
        }
        long base = offsetOf(wr);
        wrs.set(LONG, base + ATOMIC_ADDR, remoteAddress);
        wrs.set(LONG, base + ATOMIC_COMPARE_ADD, compareAdd);
        wrs.set(LONG, base + ATOMIC_SWAP, swap);
        wrs.set(INT, base + ATOMIC_RKEY, rkey);
    }

    /** Immediate data for *_WITH_IMM, in host order (sent big-endian, like htonl in C). */
    public void setImmediate(int wr, int immediate) {
        wrs.set(INT, offsetOf(wr) + IMM, Integer.reverseBytes(immediate));
    }

    /** Destination of a UD send. */
    public void setUd(int wr, AddressHandle ah, int remoteQpn, int remoteQkey) {
        long base = offsetOf(wr);
        ah.ensureOpen();
        destinations[wr] = ah;
        wrs.set(LONG, base + UD_AH, ah.segment().address());
        wrs.set(INT, base + UD_QPN, remoteQpn);
        wrs.set(INT, base + UD_QKEY, remoteQkey);
    }

    /** Before a UD post: every request has a destination, and its address handle is open. */
    void checkUdDestinations(String qp) {
        for (int i = 0; i < count(); i++) {
            AddressHandle ah = destinations[i];
            if (ah == null) {
                throw new IllegalStateException("work request " + i + " of the batch posted to " + qp
                        + " has no destination: a UD send needs setUd(...)");
            }
            ah.ensureOpen();
        }
    }

    /** For error reports and tests: the opcode code stored in request {@code wr}. */
    int opcodeCode(int wr) {
        return wrs.get(INT, offsetOf(wr) + OPCODE);
    }
}
