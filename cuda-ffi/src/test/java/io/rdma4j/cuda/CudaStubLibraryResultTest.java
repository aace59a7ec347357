package io.rdma4j.cuda;

import io.rdma4j.cuda.testing.StubCuda;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A libcuda whose cuInit answers CUDA_ERROR_STUB_LIBRARY (what the toolkit's link stub does when
 * it is found under another name): reported as such, not as "no device" (own JVM).
 */
@EnabledIfSystemProperty(named = "rdma4j.test.jvm", matches = "stub-toolkit-stub-result",
        disabledReason = "needs a JVM of its own: runs in the surefire execution jvm-stub-toolkit-stub-result")
class CudaStubLibraryResultTest {

    @Test
    void toolkitStubIsToldApartFromMissingDevices() {
        StubCuda stub = StubCuda.install();
        stub.configure(34, 1, 12040);
        CudaProbe probe = Cuda.probe();
        assertEquals(CudaStatus.STUB_LIBRARY, probe.status());
        assertTrue(probe.explanation().contains("CUDA_ERROR_STUB_LIBRARY (34)"), probe.explanation());
        assertTrue(probe.explanation().contains("not the driver"), probe.explanation());
        CudaException e = assertThrows(CudaException.class, Cuda::deviceCount, "only NO_DEVICE means zero devices");
        assertEquals(34, e.result());
    }
}
