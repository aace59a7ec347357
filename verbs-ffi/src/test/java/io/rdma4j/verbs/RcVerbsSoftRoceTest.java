package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.testing.SoftRoce;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.*;

/** The verbs data path on real Soft-RoCE devices; every test checks the bytes that arrived. */
@Tag(SoftRoce.TAG)
class RcVerbsSoftRoceTest {

    private static void pattern(MemorySegment s, long offset, int length, int seed) {
        for (int i = 0; i < length; i++) {
            s.set(JAVA_BYTE, offset + i, (byte) (i * 31 + seed));
        }
    }

    private static void assertSameBytes(MemorySegment expected, long eOff, MemorySegment actual, long aOff, int len) {
        assertEquals(-1, MemorySegment.mismatch(expected, eOff, eOff + len, actual, aOff, aOff + len),
                "bytes differ");
    }

    @Test
    void rcPairGidAddressedCarriesSendWriteImmReadAndAtomics() {
        try (RcPair p = new RcPair(1 << 20, 64);
             SendWorkRequests s = new SendWorkRequests(4, 1);
             RecvWorkRequests r = new RecvWorkRequests(4, 1)) {
            // the preferred GID is the RoCE v2 one of the device's own IPv4 address
            String ipA = SoftRoce.inGuest() ? SoftRoce.ipv4Address(p.a.ctx.name()) : null;
            if (ipA != null) {
                assertEquals("::ffff:" + ipA, p.a.gid.gid().toString());
            }

            // send / recv
            pattern(p.a.buf, 0, 4096, 1);
            int rw = r.add(7);
            r.addSge(rw, p.b.mr, 8192, 4096);
            p.b.qp.postRecv(r);
            int w = s.add(70, SendOpcode.SEND, SendFlags.SIGNALED);
            s.addSge(w, p.a.mr, 0, 4096);
            p.a.qp.postSend(s);
            p.a.await(1, "send");
            p.b.pollOne("receive");
            assertTrue(p.b.wcs.isSuccess(0), p.b.wcs.statusText(0));
            assertEquals(7, p.b.wcs.wrId(0));
            assertEquals(4096, p.b.wcs.byteLen(0));
            assertEquals(Verbs.IBV_WC_RECV(), p.b.wcs.opcode(0));
            assertSameBytes(p.a.buf, 0, p.b.buf, 8192, 4096);

            // RDMA write
            pattern(p.a.buf, 0, 3000, 2);
            s.reset();
            w = s.add(71, SendOpcode.RDMA_WRITE, SendFlags.SIGNALED);
            s.addSge(w, p.a.mr, 0, 3000);
            s.setRdma(w, p.b.mr.address() + 65536, p.b.mr.rkey());
            p.a.qp.postSend(s);
            p.a.await(1, "RDMA write");
            assertSameBytes(p.a.buf, 0, p.b.buf, 65536, 3000);

            // RDMA write with immediate: data lands, the receiver gets the immediate
            pattern(p.a.buf, 0, 512, 3);
            r.reset();
            r.add(8);
            p.b.qp.postRecv(r);
            s.reset();
            w = s.add(72, SendOpcode.RDMA_WRITE_WITH_IMM, SendFlags.SIGNALED);
            s.addSge(w, p.a.mr, 0, 512);
            s.setRdma(w, p.b.mr.address() + 131072, p.b.mr.rkey());
            s.setImmediate(w, 0xC0FFEE42);
            p.a.qp.postSend(s);
            p.a.await(1, "RDMA write with immediate");
            p.b.pollOne("write-with-immediate receive");
            assertTrue(p.b.wcs.isSuccess(0), p.b.wcs.statusText(0));
            assertEquals(Verbs.IBV_WC_RECV_RDMA_WITH_IMM(), p.b.wcs.opcode(0));
            assertTrue(p.b.wcs.hasImmData(0));
            assertEquals(0xC0FFEE42, p.b.wcs.immData(0));
            assertSameBytes(p.a.buf, 0, p.b.buf, 131072, 512);

            // RDMA read
            pattern(p.b.buf, 200_000, 2048, 4);
            s.reset();
            w = s.add(73, SendOpcode.RDMA_READ, SendFlags.SIGNALED);
            s.addSge(w, p.a.mr, 300_000, 2048);
            s.setRdma(w, p.b.mr.address() + 200_000, p.b.mr.rkey());
            p.a.qp.postSend(s);
            p.a.await(1, "RDMA read");
            assertSameBytes(p.b.buf, 200_000, p.a.buf, 300_000, 2048);

            // fetch-and-add and compare-and-swap on an 8-byte word of B
            long word = 400_000;
            p.b.buf.set(JAVA_LONG, word, 100);
            s.reset();
            w = s.add(74, SendOpcode.ATOMIC_FETCH_AND_ADD, SendFlags.SIGNALED);
            s.addSge(w, p.a.mr, 500_000, 8);
            s.setAtomic(w, p.b.mr.address() + word, p.b.mr.rkey(), 5, 0);
            p.a.qp.postSend(s);
            p.a.await(1, "fetch-and-add");
            assertEquals(100, p.a.buf.get(JAVA_LONG, 500_000), "old value returned");
            assertEquals(105, p.b.buf.get(JAVA_LONG, word));

            s.setAtomic(w, p.b.mr.address() + word, p.b.mr.rkey(), 105, 7);
            s.setOpcode(w, SendOpcode.ATOMIC_CMP_AND_SWP);
            p.a.qp.postSend(s);
            p.a.await(1, "compare-and-swap (match)");
            assertEquals(105, p.a.buf.get(JAVA_LONG, 500_000));
            assertEquals(7, p.b.buf.get(JAVA_LONG, word));

            s.setAtomic(w, p.b.mr.address() + word, p.b.mr.rkey(), 1, 99);
            p.a.qp.postSend(s);
            p.a.await(1, "compare-and-swap (mismatch)");
            assertEquals(7, p.a.buf.get(JAVA_LONG, 500_000));
            assertEquals(7, p.b.buf.get(JAVA_LONG, word), "no swap when the compare value differs");
        }
    }

    @Test
    void oneDoorbellChainOf64WritesWithEveryEighthSignalled() {
        try (RcPair p = new RcPair(1 << 20, 128); SendWorkRequests s = new SendWorkRequests(64, 1)) {
            pattern(p.a.buf, 0, 64 * 1024, 5);
            for (int i = 0; i < 64; i++) {
                int w = s.add(i, SendOpcode.RDMA_WRITE, i % 8 == 7 ? SendFlags.SIGNALED : 0);
                s.addSge(w, p.a.mr, i * 1024L, 1024);
                s.setRdma(w, p.b.mr.address() + 524288 + i * 1024L, p.b.mr.rkey());
            }
            p.a.qp.postSend(s);
            long deadline = System.nanoTime() + RcPair.POLL_TIMEOUT_NANOS;
            int seen = 0;
            while (seen < 8) {
                int n = p.a.cq.poll(p.a.wcs);
                for (int i = 0; i < n; i++) {
                    p.a.wcs.checkSuccess(i, "chained write");
                    assertEquals(seen * 8L + 7, p.a.wcs.wrId(i), "only the signalled requests complete, in order");
                    seen++;
                }
                assertTrue(System.nanoTime() < deadline, "signalled completions: " + seen + " of 8");
            }
            assertEquals(0, p.a.cq.poll(p.a.wcs), "no completion for unsignalled requests");
            assertSameBytes(p.a.buf, 0, p.b.buf, 524288, 64 * 1024);
            // the same batch posts again (links restored after the post)
            pattern(p.a.buf, 0, 64 * 1024, 6);
            p.a.qp.postSend(s);
            p.a.await(8, "second chained batch");
            assertSameBytes(p.a.buf, 0, p.b.buf, 524288, 64 * 1024);
        }
    }

    @Test
    void wrongRkeyGivesARemoteAccessErrorAndTheQpReportsError() {
        try (RcPair p = new RcPair(1 << 16, 16); SendWorkRequests s = new SendWorkRequests(1, 1)) {
            int w = s.add(99, SendOpcode.RDMA_WRITE, SendFlags.SIGNALED);
            s.addSge(w, p.a.mr, 0, 64);
            s.setRdma(w, p.b.mr.address(), p.b.mr.rkey() + 1);
            p.a.qp.postSend(s);
            p.a.pollOne("the failing write");
            assertEquals(Verbs.IBV_WC_REM_ACCESS_ERR(), p.a.wcs.status(0));
            assertEquals("remote access error", p.a.wcs.statusText(0));
            VerbsException e = assertThrows(VerbsException.class, () -> p.a.wcs.checkSuccess(0, "write with bad rkey"));
            assertTrue(e.getMessage().contains("remote access error"), e.getMessage());
            assertEquals(QpState.ERROR, p.a.qp.queryState());
        }
    }

    @Test
    void outOfBoundsRemoteAddressIsARemoteAccessErrorToo() {
        try (RcPair p = new RcPair(1 << 16, 16); SendWorkRequests s = new SendWorkRequests(1, 1)) {
            int w = s.add(98, SendOpcode.RDMA_WRITE, SendFlags.SIGNALED);
            s.addSge(w, p.a.mr, 0, 4096);
            s.setRdma(w, p.b.mr.address() + p.b.mr.length() - 100, p.b.mr.rkey());
            p.a.qp.postSend(s);
            p.a.pollOne("the out-of-bounds write");
            assertEquals(Verbs.IBV_WC_REM_ACCESS_ERR(), p.a.wcs.status(0), p.a.wcs.statusText(0));
            assertEquals(QpState.ERROR, p.a.qp.queryState());
        }
    }

    /**
     * A region past 2 GiB: 2 GiB + 4 KiB when the machine has more than 3 GiB of RAM (the guest
     * of scripts/softroce-test gets 6 GiB), else the largest that safely fits, 512 MiB. An 8 KiB
     * RDMA write that straddles offset 2^31 and ends on the region's last byte proves that
     * offsets past a signed 32-bit int are addressable and that the whole length was registered.
     */
    @Test
    void largeRegionIsRegisteredAndWrittenAcrossTwoGiB() throws Exception {
        long memKb = Files.readAllLines(Path.of("/proc/meminfo")).stream().filter(l -> l.startsWith("MemTotal:"))
                .mapToLong(l -> Long.parseLong(l.replaceAll("\\D", ""))).findFirst().orElse(0);
        boolean pastTwoGiB = memKb > 3L * 1024 * 1024;
        if (SoftRoce.inGuest() && !pastTwoGiB) {
            System.err.println("largeRegion: the guest has only " + memKb / 1024 + " MiB; registering 512 MiB "
                    + "instead of 2 GiB + 4 KiB (give it more with scripts/softroce-test -m 6144)");
        }
        long size = pastTwoGiB ? (2L << 30) + 4096 : 512L << 20;
        int length = 8192;
        long offset = size - length;
        try (RcPair p = new RcPair(length, 16); Arena big = Arena.ofShared();
             SendWorkRequests s = new SendWorkRequests(1, 1)) {
            MemorySegment region = big.allocate(size, 4096);
            try (MemoryRegion mr = p.b.pd.register(region, Access.ALL_REMOTE)) {
                assertEquals(size, mr.length());
                if (pastTwoGiB) {
                    assertTrue(offset < (1L << 31) && offset + length > (1L << 31), "the write straddles 2^31");
                }
                pattern(p.a.buf, 0, length, 9);
                int w = s.add(1, SendOpcode.RDMA_WRITE, SendFlags.SIGNALED);
                s.addSge(w, p.a.mr, 0, length);
                s.setRdma(w, mr.address() + offset, mr.rkey());
                p.a.qp.postSend(s);
                p.a.await(1, "an 8 KiB write ending on the last byte of a " + size + "-byte region");
                assertSameBytes(p.a.buf, 0, region, offset, length);
                assertEquals(0, region.get(JAVA_BYTE, offset - 1), "nothing written before the target");
            }
        }
    }
}
