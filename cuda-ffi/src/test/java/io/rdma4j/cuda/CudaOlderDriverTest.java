package io.rdma4j.cuda;

import io.rdma4j.cuda.ffi.CudaDriver;
import io.rdma4j.cuda.testing.StubCuda;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A driver older than dma-buf export (the stub without cuMemGetHandleForAddressRange, as R470's
 * libcuda): the export is a CudaException every time, the rest works (own JVM).
 */
@EnabledIfSystemProperty(named = "rdma4j.test.jvm", matches = "stub-older-driver",
        disabledReason = "needs a JVM of its own: runs in the surefire execution jvm-stub-older-driver")
class CudaOlderDriverTest {

    @BeforeAll
    static void aDriverWithoutDmaBufExport() {
        StubCuda.install(List.of("STUB_CUDA_BEFORE_11_7")).configure(0, 1, 11040);
    }

    @Test
    void dmaBufExportIsNotSupportedEveryTimeAndEverythingElseWorks() {
        CudaDevice device = Cuda.device(0);
        assertFalse(device.dmaBufSupported());
        try (CudaContext context = device.retainPrimaryContext(); DeviceBuffer b = context.allocate(4096)) {
            for (int i = 0; i < 2; i++) {
                CudaException e = assertThrows(CudaException.class, b::exportDmaBuf);
                assertEquals(CudaDriver.CUDA_ERROR_NOT_SUPPORTED(), e.result());
                assertTrue(e.getMessage().contains("cuMemGetHandleForAddressRange")
                        && e.getMessage().contains("11.4") && e.getMessage().contains("11.7"), e.getMessage());
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment source = arena.allocate(4096);
                for (int i = 0; i < 4096; i++) {
                    source.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 1));
                }
                MemorySegment back = arena.allocate(4096);
                b.copyFromHost(source);
                b.copyToHost(back);
                assertEquals(-1, source.mismatch(back));
            }
        }
    }
}
