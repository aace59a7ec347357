package io.rdma4j.verbs;

import io.rdma4j.nativesupport.internal.Checks;
import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.ibv_wc;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * A reusable array of {@code struct ibv_wc} that {@link CompletionQueue#poll} fills, read as a
 * flyweight by index: no object per completion. Valid indexes are {@code [0, count())} of the
 * last poll.
 */
@SuppressWarnings("restricted")
public final class WorkCompletions implements AutoCloseable {
    static final long STRIDE = ibv_wc.sizeof();
    static final long WR_ID = ibv_wc.wr_id$offset();
    static final long STATUS = ibv_wc.status$offset();
    static final long OPCODE = ibv_wc.opcode$offset();
    static final long VENDOR_ERR = ibv_wc.vendor_err$offset();
    static final long BYTE_LEN = ibv_wc.byte_len$offset();
    static final long IMM_DATA = ibv_wc.imm_data$offset();
    static final long QP_NUM = ibv_wc.qp_num$offset();
    static final long SRC_QP = ibv_wc.src_qp$offset();
    static final long WC_FLAGS = ibv_wc.wc_flags$offset();
    private static final ValueLayout.OfLong LONG = ibv_wc.wr_id$layout();
    private static final ValueLayout.OfInt INT = ibv_wc.status$layout();

    private final Arena arena;
    private final MemorySegment wcs;
    private final int capacity;
    private int count;

    public WorkCompletions(int capacity) {
        this.capacity = Checks.inRange("capacity", capacity, 1, 1 << 20);
        this.arena = Arena.ofShared();
        this.wcs = arena.allocate(STRIDE * capacity, ibv_wc.layout().byteAlignment());
    }

    public int capacity() {
        return capacity;
    }

    /** Completions the last poll returned. */
    public int count() {
        return count;
    }

    MemorySegment segment() {
        return wcs;
    }

    void filled(int n) {
        count = n;
    }

    private long at(int i, long field) {
        Objects.checkIndex(i, count);
        return i * STRIDE + field;
    }

    public long wrId(int i) {
        return wcs.get(LONG, at(i, WR_ID));
    }

    /** {@code enum ibv_wc_status}; 0 is success. */
    public int status(int i) {
        return wcs.get(INT, at(i, STATUS));
    }

    public boolean isSuccess(int i) {
        return status(i) == Verbs.IBV_WC_SUCCESS();
    }

    /** {@code enum ibv_wc_opcode} (IBV_WC_SEND, IBV_WC_RECV, ...). */
    public int opcode(int i) {
        return wcs.get(INT, at(i, OPCODE));
    }

    public int vendorError(int i) {
        return wcs.get(INT, at(i, VENDOR_ERR));
    }

    /** Bytes the completion moved: an unsigned 32-bit count (a message of 2 GiB or more is not negative). */
    public long byteLen(int i) {
        return Integer.toUnsignedLong(wcs.get(INT, at(i, BYTE_LEN)));
    }

    /** The immediate value in host order (it travels big-endian, as C senders write htonl(x)). */
    public int immData(int i) {
        return Integer.reverseBytes(wcs.get(INT, at(i, IMM_DATA)));
    }

    public boolean hasImmData(int i) {
        return (wcFlags(i) & Verbs.IBV_WC_WITH_IMM()) != 0;
    }

    public int qpNumber(int i) {
        return wcs.get(INT, at(i, QP_NUM));
    }

    public int sourceQp(int i) {
        return wcs.get(INT, at(i, SRC_QP));
    }

    public int wcFlags(int i) {
        return wcs.get(INT, at(i, WC_FLAGS));
    }

    /** ibv_wc_status_str of the status, e.g. "remote access error"; for error reports, not the hot path. */
    public String statusText(int i) {
        return describeStatus(status(i));
    }

    /**
     * Whether {@code status} says the transport retries ran out (IBV_WC_RETRY_EXC_ERR): the
     * peer did not acknowledge, it is unreachable or dead.
     */
    public static boolean isRetryExceeded(int status) {
        return status == Verbs.IBV_WC_RETRY_EXC_ERR();
    }

    public static String describeStatus(int status) {
        return NativeLibrary.IBVERBS.isAvailable()
                ? Verbs.ibv_wc_status_str(status).reinterpret(128).getString(0)
                : "status " + status;
    }

    /** Throws a VerbsException describing completion {@code i} unless it succeeded. */
    public void checkSuccess(int i, String context) {
        int s = status(i);
        if (s != Verbs.IBV_WC_SUCCESS()) {
            throw new VerbsException(context + ": work request " + wrId(i) + " completed with status " + s + " ("
                    + describeStatus(s) + "), vendor error 0x" + Integer.toHexString(vendorError(i)));
        }
    }

    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
