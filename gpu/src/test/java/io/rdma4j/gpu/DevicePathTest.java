package io.rdma4j.gpu;

import io.rdma4j.gpu.GpuDirectSupport.Status;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every transport and GPUDirect answer: staged, with the reason that applies. */
class DevicePathTest {
    private static final GpuDirectSupport NONE = new GpuDirectSupport(Status.UNAVAILABLE, "no RDMA device (ENOSYS)");
    private static final GpuDirectSupport DMABUF = new GpuDirectSupport(Status.AVAILABLE_DMABUF, "registered");

    @Test
    void hostOnlyTransportsStageWhateverTheNicCouldDo() {
        for (String provider : new String[] {"tcp", "shm"}) {
            DevicePath p = DevicePath.forAllReduce(provider, DMABUF);
            assertTrue(p.toString().startsWith("staged through host memory (the " + provider), p.toString());
            assertTrue(p.reason().startsWith("the " + provider + " transport moves host memory only"), p.reason());
            assertTrue(p.reason().endsWith("AVAILABLE_DMABUF: registered"), p.reason());
        }
    }

    @Test
    void verbsWithoutGpuDirectStagesAndSaysWhyNot() {
        DevicePath p = DevicePath.forAllReduce("verbs", NONE);
        assertEquals("GPUDirect RDMA is unavailable; GPUDirect RDMA detection: UNAVAILABLE: no RDMA device (ENOSYS)",
                p.reason());
    }

    @Test
    void verbsWithGpuDirectStillStagesBecauseReductionRunsOnTheCpu() {
        DevicePath p = DevicePath.forAllReduce("verbs", DMABUF);
        assertTrue(p.reason().contains("available (AVAILABLE_DMABUF), but rdma4j reduces on the CPU"), p.reason());
        assertEquals(DMABUF, p.gpuDirect());
    }
}
