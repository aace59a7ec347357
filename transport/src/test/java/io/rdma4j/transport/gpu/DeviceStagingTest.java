package io.rdma4j.transport.gpu;

import io.rdma4j.cuda.Cuda;
import io.rdma4j.cuda.CudaContext;
import io.rdma4j.cuda.DeviceBuffer;
import io.rdma4j.cuda.testing.StubCuda;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The staged device path over real transports (TCP, shared memory) between two in-process ranks,
 * with cuda-ffi's stub driver as the "GPU" (own JVM): checks chunking, slot reuse, offsets and
 * that every chunk crosses the PCIe side exactly once. Says nothing about GPU speed or overlap.
 */
@EnabledIfSystemProperty(named = "rdma4j.test.jvm", matches = "stub-cuda",
        disabledReason = "needs a JVM of its own: runs in the surefire execution jvm-stub-cuda")
class DeviceStagingTest {
    private static final long TIMEOUT = TimeUnit.SECONDS.toNanos(20);
    private static StubCuda stub;

    @BeforeAll
    static void stubWithTwoDevices() {
        stub = StubCuda.install();
        stub.configure(0, 2, 12040);
    }

    private static byte[] pattern(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 131 + (i >>> 9) + 1);
        }
        return b;
    }

    @ParameterizedTest
    @EnumSource(value = TransportConfig.Provider.class, names = {"TCP", "SHM"})
    void deviceBytesArriveInDeviceMemoryChunkByChunk(TransportConfig.Provider provider) throws Exception {
        long chunk = 4096;
        int slots = 3;
        int length = 7 * 4096 + 123; // 8 chunks, the last one short, more chunks than slots
        int bufferBytes = length + 100;
        byte[] data = pattern(bufferBytes);
        long d2h = stub.calls("cuMemcpyDtoHAsync_v2");
        long h2d = stub.calls("cuMemcpyHtoDAsync_v2");
        try (LocalGroup group = LocalGroup.start(2, LocalGroup.config(provider))) {
            group.run(Duration.ofSeconds(60), (rank, transport, store) -> {
                try (CudaContext ctx = Cuda.device(rank).retainPrimaryContext();
                     DeviceStaging staging = new DeviceStaging(transport, ctx, chunk, slots);
                     DeviceBuffer device = ctx.allocate(bufferBytes);
                     Arena arena = Arena.ofConfined()) {
                    if (rank == 0) {
                        device.copyFromHost(arena.allocateFrom(ValueLayout.JAVA_BYTE, data));
                        staging.send(transport.connection(1), device, 3, length, 42, TIMEOUT);
                        // a second transfer through the same slots
                        staging.send(transport.connection(1), device, 0, 10, 43, TIMEOUT);
                    } else {
                        device.fill((byte) 0);
                        staging.receive(transport.connection(0), device, 7, length, 42, TIMEOUT);
                        MemorySegment got = arena.allocate(bufferBytes);
                        device.copyToHost(got);
                        MemorySegment sent = MemorySegment.ofArray(data);
                        assertEquals(-1, got.asSlice(7, length).mismatch(sent.asSlice(3, length)),
                                "received bytes differ from the sent range");
                        for (long i = 0; i < bufferBytes; i++) {
                            if (i < 7 || i >= 7 + length) {
                                assertEquals(0, got.get(ValueLayout.JAVA_BYTE, i), "byte " + i + " outside the target range");
                            }
                        }
                        staging.receive(transport.connection(0), device, bufferBytes - 10, 10, 43, TIMEOUT);
                        device.copyToHost(got);
                        assertEquals(-1, got.asSlice(bufferBytes - 10, 10).mismatch(sent.asSlice(0, 10)));
                    }
                }
            });
        }
        assertEquals(d2h + 8 + 1, stub.calls("cuMemcpyDtoHAsync_v2"), "one D2H copy per chunk");
        assertEquals(h2d + 8 + 1, stub.calls("cuMemcpyHtoDAsync_v2"), "one H2D copy per chunk");
    }

    @Test
    void differentChunkSizesOnTheTwoSidesAreReported() throws Exception {
        try (LocalGroup group = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            Exception e = assertThrows(Exception.class, () -> group.run(Duration.ofSeconds(30), (rank, transport, store) -> {
                try (CudaContext ctx = Cuda.device(0).retainPrimaryContext();
                     DeviceStaging staging = new DeviceStaging(transport, ctx, rank == 0 ? 8192 : 4096, 2);
                     DeviceBuffer device = ctx.allocate(5 * 4096)) {
                    if (rank == 0) {
                        staging.receive(transport.connection(1), device, 0, 5 * 4096, 7, TIMEOUT);
                    } else {
                        staging.send(transport.connection(0), device, 0, 5 * 4096, 7, TIMEOUT);
                    }
                }
            }));
            assertTrue(e.getMessage().contains("rank 0") && e.getCause().getMessage().contains("same chunk size"),
                    e.getMessage() + " / " + e.getCause());
        }
    }

    @Test
    void badArgumentsAndUseAfterCloseAreRejected() {
        try (LocalGroup group = LocalGroup.start(1, LocalGroup.config(TransportConfig.Provider.TCP));
             CudaContext ctx = Cuda.device(0).retainPrimaryContext();
             CudaContext other = Cuda.device(1).retainPrimaryContext();
             DeviceBuffer device = ctx.allocate(4096);
             DeviceBuffer foreign = other.allocate(4096)) {
            var transport = group.transport(0);
            assertThrows(IllegalArgumentException.class, () -> new DeviceStaging(transport, ctx, 4096, 1));
            assertThrows(IllegalArgumentException.class, () -> new DeviceStaging(transport, ctx, 0, 2));
            int pinned = stub.liveHostAllocations();
            DeviceStaging staging = new DeviceStaging(transport, ctx, 1024, 2);
            assertEquals(pinned + 1, stub.liveHostAllocations(), "one pinned bounce buffer");
            assertThrows(IndexOutOfBoundsException.class, () -> staging.send(null, device, 4000, 97, 1, TIMEOUT));
            assertThrows(IndexOutOfBoundsException.class, () -> staging.receive(null, device, -1, 10, 1, TIMEOUT));
            assertThrows(IllegalArgumentException.class, () -> staging.send(null, foreign, 0, 10, 1, TIMEOUT));
            staging.close();
            staging.close();
            assertEquals(pinned, stub.liveHostAllocations(), "the bounce buffer was freed");
            assertThrows(IllegalStateException.class, () -> staging.send(null, device, 0, 10, 1, TIMEOUT));
        }
    }
}
