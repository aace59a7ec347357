package io.rdma4j.cuda;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The CUDA layer on the machine's real driver and GPU; skipped, with the probe's explanation as
 * the reason, where there is none (own JVM, so no stub is loaded here).
 */
@EnabledIfSystemProperty(named = "rdma4j.test.jvm", matches = "real-driver",
        disabledReason = "needs a JVM of its own: runs in the surefire execution jvm-real-driver")
class CudaRealDriverTest {
    private static CudaProbe probe;

    @BeforeAll
    static void probe() {
        probe = Cuda.probe();
        if (!probe.available()) {
            // surefire does not print assumption messages; say it where the build log shows it
            System.out.println("CudaRealDriverTest skipped: no usable GPU (" + probe.status() + "): "
                    + probe.explanation());
        }
    }

    @BeforeEach
    void needsAGpu() {
        Assumptions.assumeTrue(probe.available(), () -> "no usable GPU, skipping real-driver tests: "
                + probe.status() + ": " + probe.explanation());
        Assumptions.assumeFalse(probe.library().orElseThrow().toString().contains("rdma4j-stub-cuda"),
                "the stub driver is loaded in this JVM; real-driver tests need the real one");
    }

    @Test
    void deviceReportsSaneAttributes() {
        CudaDevice d = Cuda.device(0);
        assertFalse(d.name().isBlank());
        assertTrue(d.pciBusId().matches("[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-7]"), d.pciBusId());
        assertTrue(d.computeCapability().major() >= 3);
        assertTrue(d.totalMemory() > 0);
        assertTrue(d.unifiedAddressing(), "every 64-bit Linux GPU since Fermi has unified addressing");
    }

    @Test
    void bytesSurviveTheTripThroughTheGpu() {
        int n = 8 << 20;
        try (CudaContext ctx = Cuda.device(0).retainPrimaryContext();
             DeviceBuffer d = ctx.allocate(n);
             PinnedHostBuffer src = ctx.allocatePinned(n);
             CudaStream stream = ctx.createStream();
             Arena arena = Arena.ofConfined()) {
            for (long i = 0; i < n; i++) {
                src.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + (i >>> 8)));
            }
            MemorySegment dst = arena.allocate(n);
            d.copyFromHostAsync(src.segment(), 0, 0, n, stream);
            d.slice(n / 2, n / 2).fillAsync((byte) 0x5A, stream);
            d.copyToHostAsync(0, dst, 0, n, stream);
            stream.synchronize(Duration.ofSeconds(30));
            assertEquals(-1, dst.asSlice(0, n / 2).mismatch(src.segment().asSlice(0, n / 2)));
            assertEquals(0x5A, dst.get(java.lang.foreign.ValueLayout.JAVA_BYTE, n - 1));
            assertEquals(CudaMemoryType.DEVICE, d.memoryType());
            assertEquals(0, d.deviceOrdinal());
            assertEquals(CudaMemoryType.HOST, src.memoryType());
        }
    }
}
