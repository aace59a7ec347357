package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.ibv_context;
import io.rdma4j.verbs.ffi.verbs_context;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/** Argument checks, GID handling, resource lifetimes and the verbs_context lookup, without a device. */
class ValidationTest {
    private static Gid gid(int... tail) {
        byte[] raw = new byte[16];
        for (int i = 0; i < tail.length; i++) {
            raw[16 - tail.length + i] = (byte) tail[i];
        }
        return new Gid(raw);
    }

    @Test
    void rcKnobsOutsideTheirBitFieldsAreRejectedWithTheirName() {
        assertEquals("timeout must be in [0, 31], got 32",
                assertThrows(IllegalArgumentException.class, () -> RcParams.builder().timeout(32).build()).getMessage());
        assertThrows(IllegalArgumentException.class, () -> RcParams.builder().retryCount(8).build());
        assertThrows(IllegalArgumentException.class, () -> RcParams.builder().rnrRetry(-1).build());
        assertThrows(IllegalArgumentException.class, () -> RcParams.builder().serviceLevel(16).build());
        assertThrows(IllegalArgumentException.class, () -> RcParams.builder().trafficClass(256).build());
        assertThrows(IllegalArgumentException.class, () -> RcParams.builder().port(0).build());
        assertThrows(NullPointerException.class, () -> RcParams.builder().mtu(null).build());
        assertEquals("psn must be in [0, 16777215], got 16777216",
                assertThrows(IllegalArgumentException.class, () -> new QpEndpoint(1, 1 << 24, 0, null)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> new QpCapabilities(0, 1, 1, 1, 0));
        assertThrows(IllegalArgumentException.class, () -> new QpCapabilities(1, 1, 1, 1, -1));
        assertThrows(IllegalArgumentException.class, () -> new CmConnectionParams(1, 1, 8, 7));
        RcParams d = RcParams.builder().build();
        assertEquals(d, d.toBuilder().build(), "toBuilder round-trips");
    }

    @Test
    void onlyLiveNativeNonEmptyMemoryCanBeRegistered() {
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> MemoryRegion.checkRegistrable(MemorySegment.ofArray(new byte[64]), Access.ALL_REMOTE))
                .getMessage().contains("native"));
        Arena a = Arena.ofConfined();
        MemorySegment seg = a.allocate(64);
        assertThrows(IllegalArgumentException.class, () -> MemoryRegion.checkRegistrable(seg.asSlice(0, 0), Access.ALL_REMOTE));
        MemoryRegion.checkRegistrable(seg, Access.ALL_REMOTE);
        a.close();
        assertThrows(IllegalStateException.class, () -> MemoryRegion.checkRegistrable(seg, Access.ALL_REMOTE));
    }

    /** A read-only view may be registered for reads only: any write access would let the device write into it. */
    @Test
    void aReadOnlySegmentIsRegistrableForReadingOnly() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment readOnly = a.allocate(64).asReadOnly();
            MemoryRegion.checkRegistrable(readOnly, Access.REMOTE_READ);
            MemoryRegion.checkRegistrable(readOnly, 0);
            for (int write : new int[] {Access.LOCAL_WRITE, Access.LOCAL_WRITE | Access.REMOTE_WRITE,
                    Access.LOCAL_WRITE | Access.REMOTE_ATOMIC, Access.ALL_REMOTE}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> MemoryRegion.checkRegistrable(readOnly, write));
                assertTrue(e.getMessage().contains("read-only"), e.getMessage());
            }
        }
    }

    @Test
    void gidsPrintLikeIbvDevinfoAndRoceV2Ipv4IsPreferred() {
        Gid linkLocal = new Gid(new byte[]{(byte) 0xfe, (byte) 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, (byte) 0xff,
                (byte) 0xfe, 0x12, 0x34, 0x56});
        Gid v4 = gid(0xff, 0xff, 198, 18, 0, 1);
        assertEquals("fe80:0000:0000:0000:5054:00ff:fe12:3456", linkLocal.toString());
        assertEquals("::ffff:198.18.0.1", v4.toString());
        assertTrue(v4.isIpv4Mapped());
        assertFalse(linkLocal.isIpv4Mapped());
        List<GidEntry> table = List.of(
                new GidEntry(1, 0, linkLocal, GidType.ROCE_V1),
                new GidEntry(1, 1, linkLocal, GidType.ROCE_V2),
                new GidEntry(1, 2, v4, GidType.ROCE_V1),
                new GidEntry(1, 3, v4, GidType.ROCE_V2),
                new GidEntry(1, 4, new Gid(new byte[16]), GidType.ROCE_V2));
        assertEquals(3, GidEntry.preferred(table).orElseThrow().index());
        assertEquals(1, GidEntry.preferred(table.subList(0, 3)).orElseThrow().index(), "v2 link-local before v1");
        assertTrue(GidEntry.preferred(List.of(table.get(4))).isEmpty(), "zero GID is unusable");
        assertEquals(GidType.ROCE_V2, GidType.ofSysfs("RoCE v2\n"));
        assertEquals(GidType.ROCE_V1, GidType.ofSysfs("IB/RoCE v1"));
        assertThrows(IllegalArgumentException.class, () -> new Gid(new byte[4]));
    }

    @Test
    void extendedQueryPortIsFoundThroughTheEnclosingVerbsContext() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment vctx = a.allocate(verbs_context.layout());
            MemorySegment ctx = vctx.asSlice(verbs_context.context$offset(), ibv_context.sizeof());
            MemorySegment fn = a.allocate(1);
            verbs_context.query_port(vctx, fn);
            verbs_context.sz(vctx, verbs_context.sizeof());

            assertNull(DeviceContext.verbsContextOf(ctx), "legacy context (abi_compat not extended)");
            ibv_context.abi_compat(ctx, Verbs.__VERBS_ABI_IS_EXTENDED());
            MemorySegment found = DeviceContext.verbsContextOf(ctx);
            assertNotNull(found);
            assertEquals(vctx.address(), found.address(), "container_of(ctx, struct verbs_context, context)");
            assertEquals(fn.address(), verbs_context.query_port(found).address());

            verbs_context.sz(vctx, verbs_context.sizeof() - verbs_context.query_port$offset() - 8);
            assertNull(DeviceContext.verbsContextOf(ctx), "provider's table too short to hold query_port");
            verbs_context.sz(vctx, verbs_context.sizeof());
            verbs_context.query_port(vctx, MemorySegment.NULL);
            assertNull(DeviceContext.verbsContextOf(ctx), "op not implemented");
        }
    }
}
