package io.rdma4j.cuda;

import io.rdma4j.cuda.testing.StubCuda;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;


import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A driver that is installed but finds no GPU: stub cuInit returns CUDA_ERROR_NO_DEVICE (own JVM). */
@EnabledIfSystemProperty(named = "rdma4j.test.jvm", matches = "stub-no-device",
        disabledReason = "needs a JVM of its own: runs in the surefire execution jvm-stub-no-device")
class CudaNoDeviceTest {
    private static StubCuda stub;

    @BeforeAll
    static void stubWithoutDevices() {
        stub = StubCuda.install();
        stub.configure(100, 0, 12040);
    }

    @Test
    void probeSaysThereIsNoGpuAndQuotesTheDriver() {
        CudaProbe probe = Cuda.probe();
        assertEquals(CudaStatus.NO_DEVICE, probe.status());
        assertEquals(100, probe.result());
        assertEquals(stub.library, probe.library().orElseThrow());
        assertEquals("12.4", probe.driverVersionString());
        String e = probe.explanation();
        assertTrue(e.contains("there is no GPU"), e);
        assertTrue(e.contains("CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected"), e);
        assertTrue(e.contains("nvidia-smi"), e);
    }

    @Test
    void deviceCountIsZeroButOpeningADeviceFailsWithTheDriverError() {
        assertEquals(0, Cuda.deviceCount());
        CudaException e = assertThrows(CudaException.class, () -> Cuda.device(0));
        assertEquals(100, e.result());
        assertEquals("CUDA_ERROR_NO_DEVICE", e.errorName());
        assertEquals("no CUDA-capable device is detected", e.errorString());
        assertEquals("cuInit", e.function());
    }

    @Test
    void cuInitIsCalledOnceHoweverOftenItIsAsked() {
        Cuda.probe();
        Cuda.probe();
        Cuda.deviceCount();
        assertThrows(CudaException.class, Cuda::init);
        assertEquals(1, stub.calls("cuInit"));
    }
}
