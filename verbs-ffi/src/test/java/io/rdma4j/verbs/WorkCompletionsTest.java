package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.ibv_wc;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.*;

/** The flyweight over the ibv_wc array, filled here as poll_cq would fill it. */
class WorkCompletionsTest {

    @Test
    void readsEachCompletionOfThePollByIndex() {
        try (WorkCompletions wcs = new WorkCompletions(4)) {
            for (int i = 0; i < 2; i++) {
                MemorySegment wc = wcs.segment().asSlice(i * ibv_wc.sizeof(), ibv_wc.sizeof());
                ibv_wc.wr_id(wc, 1000 + i);
                ibv_wc.byte_len(wc, 64 * (i + 1));
                ibv_wc.opcode(wc, Verbs.IBV_WC_RECV_RDMA_WITH_IMM());
                ibv_wc.imm_data(wc, Integer.reverseBytes(0xcafe0000 + i));
                ibv_wc.wc_flags(wc, Verbs.IBV_WC_WITH_IMM());
                ibv_wc.qp_num(wc, 17);
            }
            MemorySegment failed = wcs.segment().asSlice(ibv_wc.sizeof());
            ibv_wc.status(failed, Verbs.IBV_WC_REM_ACCESS_ERR());
            wcs.filled(2);

            assertEquals(2, wcs.count());
            assertEquals(1000, wcs.wrId(0));
            assertEquals(1001, wcs.wrId(1));
            assertEquals(128, wcs.byteLen(1));
            ibv_wc.byte_len(wcs.segment(), 0x8000_0000); // 2 GiB, the largest message a port may take
            assertEquals(1L << 31, wcs.byteLen(0), "byte_len is unsigned");
            assertEquals(0xcafe0001, wcs.immData(1), "immediate converted to host order");
            assertTrue(wcs.hasImmData(0));
            assertEquals(Verbs.IBV_WC_RECV_RDMA_WITH_IMM(), wcs.opcode(0));
            assertEquals(17, wcs.qpNumber(0));
            assertTrue(wcs.isSuccess(0));
            assertFalse(wcs.isSuccess(1));
            // ibv_wc_status_str names the status; without libibverbs the number is all there is
            String text = NativeLibrary.IBVERBS.isAvailable() ? "remote access error"
                    : "status " + Verbs.IBV_WC_REM_ACCESS_ERR();
            assertEquals(text, wcs.statusText(1));
            VerbsException e = assertThrows(VerbsException.class, () -> wcs.checkSuccess(1, "RDMA write to peer 2"));
            assertTrue(e.getMessage().startsWith("RDMA write to peer 2: work request 1001 completed with status "
                    + Verbs.IBV_WC_REM_ACCESS_ERR() + " (" + text + ")"), e.getMessage());
            assertThrows(IndexOutOfBoundsException.class, () -> wcs.wrId(2), "only 2 completions were polled");
        }
        assertThrows(IllegalArgumentException.class, () -> new WorkCompletions(0));
    }
}
