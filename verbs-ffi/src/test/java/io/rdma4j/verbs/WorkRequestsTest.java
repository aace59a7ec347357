package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.ibv_recv_wr;
import io.rdma4j.verbs.ffi.ibv_send_wr;
import io.rdma4j.verbs.ffi.ibv_sge;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The off-heap work request chains, read back through the generated accessors (an independent
 * path to the same bytes): linking, patching, batch and SGE limits, and argument checks.
 */
class WorkRequestsTest {

    private static MemorySegment wr(SendWorkRequests wrs, int i) {
        return wrs.wrs.asSlice(i * ibv_send_wr.sizeof(), ibv_send_wr.sizeof());
    }

    private static MemorySegment sge(MemorySegment wr, int k) {
        return ibv_send_wr.sg_list(wr).reinterpret(ibv_sge.sizeof() * (k + 1)).asSlice(k * ibv_sge.sizeof());
    }

    @Test
    void chainIsPrelinkedAndTerminatedOnlyForThePost() {
        try (SendWorkRequests wrs = new SendWorkRequests(4, 2)) {
            for (int i = 0; i < 3; i++) {
                assertEquals(wr(wrs, i + 1).address(), ibv_send_wr.next(wr(wrs, i)).address(), "next of " + i);
            }
            assertEquals(0, ibv_send_wr.next(wr(wrs, 3)).address(), "last next is NULL");
            wrs.add(1, SendOpcode.SEND, 0);
            wrs.add(2, SendOpcode.SEND, 0);
            MemorySegment head = wrs.terminate();
            assertEquals(wr(wrs, 0).address(), head.address());
            assertEquals(0, ibv_send_wr.next(wr(wrs, 1)).address(), "batch of 2 ends after the second");
            wrs.relink();
            assertEquals(wr(wrs, 2).address(), ibv_send_wr.next(wr(wrs, 1)).address(), "link restored");
            // each request has its own SGE slots
            assertEquals(ibv_send_wr.sg_list(wr(wrs, 0)).address() + 2 * ibv_sge.sizeof(),
                    ibv_send_wr.sg_list(wr(wrs, 1)).address());
        }
    }

    @Test
    void patchedFieldsLandWhereTheProviderReadsThem() {
        try (SendWorkRequests wrs = new SendWorkRequests(8, 2)) {
            int w = wrs.add(77, SendOpcode.RDMA_WRITE_WITH_IMM, SendFlags.SIGNALED | SendFlags.SOLICITED);
            wrs.addSge(w, 0x1000, 4096, 0xaa);
            wrs.addSge(w, 0x9000, 0xffff_ffffL, 0xbb);
            wrs.setRdma(w, 0x7f00_0000_1000L, 0x55);
            wrs.setImmediate(w, 0x01020304);
            MemorySegment s = wr(wrs, w);
            assertEquals(77, ibv_send_wr.wr_id(s));
            assertEquals(Verbs.IBV_WR_RDMA_WRITE_WITH_IMM(), ibv_send_wr.opcode(s));
            assertEquals(Verbs.IBV_SEND_SIGNALED() | Verbs.IBV_SEND_SOLICITED(), ibv_send_wr.send_flags(s));
            assertEquals(2, ibv_send_wr.num_sge(s));
            assertEquals(0x04030201, ibv_send_wr.imm_data(s), "immediate stored big-endian");
            MemorySegment rdma = ibv_send_wr.wr.rdma(ibv_send_wr.wr(s));
            assertEquals(0x7f00_0000_1000L, ibv_send_wr.wr.rdma.remote_addr(rdma));
            assertEquals(0x55, ibv_send_wr.wr.rdma.rkey(rdma));
            assertEquals(0x9000, ibv_sge.addr(sge(s, 1)));
            assertEquals(-1, ibv_sge.length(sge(s, 1)), "uint32 max");
            assertEquals(0xbb, ibv_sge.lkey(sge(s, 1)));

            int a = wrs.add(78, SendOpcode.ATOMIC_CMP_AND_SWP, 0);
            wrs.setAtomic(a, 0x2000, 9, 5, 6);
            MemorySegment atomic = ibv_send_wr.wr.atomic(ibv_send_wr.wr(wr(wrs, a)));
            assertEquals(0x2000, ibv_send_wr.wr.atomic.remote_addr(atomic));
            assertEquals(5, ibv_send_wr.wr.atomic.compare_add(atomic));
            assertEquals(6, ibv_send_wr.wr.atomic.swap(atomic));
            assertEquals(9, ibv_send_wr.wr.atomic.rkey(atomic));

            wrs.setSgeLength(w, 0, 64);
            wrs.setWrId(w, 99);
            wrs.setFlags(w, 0);
            assertEquals(64, ibv_sge.length(sge(s, 0)));
            assertEquals(99, wrs.wrId(w));
            assertEquals(0, ibv_send_wr.send_flags(s));
        }
    }

    @Test
    void reusingASlotClearsWhatThePreviousBatchLeftThere() {
        try (SendWorkRequests wrs = new SendWorkRequests(2, 1)) {
            int w = wrs.add(1, SendOpcode.RDMA_WRITE_WITH_IMM, SendFlags.SIGNALED);
            wrs.setImmediate(w, 42);
            wrs.setRdma(w, 0x1234, 7);
            wrs.addSge(w, 1, 2, 3);
            wrs.reset();
            w = wrs.add(2, SendOpcode.SEND, 0);
            MemorySegment s = wr(wrs, w);
            assertEquals(0, ibv_send_wr.imm_data(s));
            assertEquals(0, ibv_send_wr.num_sge(s));
            assertEquals(0, ibv_send_wr.wr.rdma.remote_addr(ibv_send_wr.wr.rdma(ibv_send_wr.wr(s))));
            assertNotEquals(0, ibv_send_wr.sg_list(s).address(), "sg_list stays linked");
            assertEquals(wr(wrs, 1).address(), ibv_send_wr.next(s).address(), "next stays linked");
        }
    }

    @Test
    void batchAndSgeOverflowAreClearErrors() {
        try (SendWorkRequests wrs = new SendWorkRequests(64, 1)) {
            for (int i = 0; i < 64; i++) {
                wrs.add(i, SendOpcode.SEND, 0);
            }
            IllegalStateException full = assertThrows(IllegalStateException.class, () -> wrs.add(64, SendOpcode.SEND, 0));
            assertEquals("SendWorkRequests batch is full (capacity 64); post it or reset() before adding more",
                    full.getMessage());
            wrs.addSge(0, 1, 1, 1);
            IllegalStateException sges = assertThrows(IllegalStateException.class, () -> wrs.addSge(0, 1, 1, 1));
            assertTrue(sges.getMessage().contains("maximum of 1 scatter/gather"), sges.getMessage());
            assertEquals(64, wrs.count());
        }
    }

    @Test
    void badArgumentsFailFast() {
        try (SendWorkRequests wrs = new SendWorkRequests(4, 2)) {
            IllegalStateException empty = assertThrows(IllegalStateException.class, wrs::terminate);
            assertTrue(empty.getMessage().contains("batch is empty"), empty.getMessage());
            int w = wrs.add(1, SendOpcode.SEND, 0);
            IllegalArgumentException neg = assertThrows(IllegalArgumentException.class, () -> wrs.addSge(w, 0, -1, 0));
            assertEquals("length must be in [0, 4294967295], got -1", neg.getMessage());
            assertThrows(IllegalArgumentException.class, () -> wrs.addSge(w, 0, 1L << 32, 0));
            assertThrows(IndexOutOfBoundsException.class, () -> wrs.setRdma(1, 0, 0), "index past the batch");
            assertThrows(IndexOutOfBoundsException.class, () -> wrs.setSgeLength(w, 0, 1), "no SGE 0 yet");
            assertThrows(IllegalArgumentException.class, () -> wrs.setAtomic(w, 0x1001, 0, 0, 0), "unaligned atomic");
            assertEquals(0, wrs.sgeCount(w));
        }
        assertThrows(IllegalArgumentException.class, () -> new SendWorkRequests(0, 1));
        assertThrows(IllegalArgumentException.class, () -> new RecvWorkRequests(1, 0));
    }

    @Test
    void badWrAddressMapsBackToTheRequestIndex() {
        try (RecvWorkRequests wrs = new RecvWorkRequests(8, 1)) {
            for (int i = 0; i < 5; i++) {
                wrs.add(100 + i);
            }
            long base = wrs.wrs.address();
            assertEquals(3, wrs.indexOf(base + 3 * ibv_recv_wr.sizeof()));
            assertEquals(-1, wrs.indexOf(base + 6 * ibv_recv_wr.sizeof()), "beyond the batch");
            assertEquals(-1, wrs.indexOf(base + 1), "not a request boundary");
            assertEquals(103, ibv_recv_wr.wr_id(wrs.wrs.asSlice(3 * ibv_recv_wr.sizeof())));
        }
    }
}
