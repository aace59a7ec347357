package io.rdma4j.gpu;

import io.rdma4j.cuda.Cuda;
import io.rdma4j.cuda.CudaProbe;
import io.rdma4j.cuda.CudaStatus;
import io.rdma4j.verbs.DeviceDiscovery;
import io.rdma4j.verbs.DiscoveryStatus;
import io.rdma4j.verbs.RdmaDevices;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GpuDirectTest {
    private static final CudaProbe GPU = new CudaProbe(CudaStatus.AVAILABLE, "CUDA driver x, 1 device(s)",
            Optional.of(Path.of("/usr/lib/libcuda.so.1")), 12040, 1, 0);
    private static final CudaProbe NO_GPU = new CudaProbe(CudaStatus.LIBRARY_MISSING, "libcuda.so.1 was not found",
            Optional.empty(), 0, 0, 0);
    private static final DeviceDiscovery NIC = new DeviceDiscovery(DiscoveryStatus.DEVICES_FOUND, List.of(), "");
    private static final DeviceDiscovery NO_NIC = new DeviceDiscovery(DiscoveryStatus.KERNEL_NO_RDMA, List.of(),
            "the running kernel exposes no RDMA support");

    /** Facts with fixed answers; the dma-buf probe must only run when there are a GPU and a NIC. */
    private record Fixed(CudaProbe cuda, DeviceDiscovery rdma, Optional<String> dmaBuf, Optional<String> module)
            implements GpuDirect.Facts {
        @Override
        public Optional<String> dmaBufRegistrationFailure() {
            if (!cuda.available() || !rdma.hasDevices()) {
                throw new AssertionError("the dma-buf probe needs a GPU and an RDMA device");
            }
            return dmaBuf;
        }

        @Override
        public Optional<String> peerMemModule() {
            return module;
        }
    }

    @Test
    void dmaBufIsPreferredWhenRegistrationWorks() {
        var s = GpuDirect.decide(new Fixed(GPU, NIC, Optional.empty(), Optional.of("nvidia_peermem")));
        assertEquals(GpuDirectSupport.Status.AVAILABLE_DMABUF, s.status());
        assertTrue(s.available());
    }

    @Test
    void peerMemIsTheFallbackAndTheDmaBufFailureIsKept() {
        var s = GpuDirect.decide(new Fixed(GPU, NIC, Optional.of("ibv_reg_dmabuf_mr: EOPNOTSUPP"),
                Optional.of("nvidia_peermem")));
        assertEquals(GpuDirectSupport.Status.AVAILABLE_PEERMEM, s.status());
        assertTrue(s.reason().contains("nvidia_peermem") && s.reason().contains("EOPNOTSUPP"), s.reason());
    }

    @Test
    void neitherMechanismMeansStagedWithBothReasons() {
        var s = GpuDirect.decide(new Fixed(GPU, NIC, Optional.of("CUDA_ERROR_NOT_SUPPORTED"), Optional.empty()));
        assertEquals(GpuDirectSupport.Status.UNAVAILABLE, s.status());
        assertTrue(s.reason().contains("CUDA_ERROR_NOT_SUPPORTED") && s.reason().contains("modprobe nvidia_peermem")
                && s.reason().contains("staged"), s.reason());
    }

    @Test
    void missingHardwareIsNamedWithoutProbing() {
        var both = GpuDirect.decide(new Fixed(NO_GPU, NO_NIC, Optional.empty(), Optional.of("nvidia_peermem")));
        assertEquals(GpuDirectSupport.Status.UNAVAILABLE, both.status());
        assertTrue(both.reason().contains("no GPU (LIBRARY_MISSING: libcuda.so.1 was not found)"), both.reason());
        assertTrue(both.reason().contains("no RDMA device (KERNEL_NO_RDMA"), both.reason());
        var noNic = GpuDirect.decide(new Fixed(GPU, NO_NIC, Optional.empty(), Optional.empty()));
        assertFalse(noNic.reason().contains("no GPU"), noNic.reason());
        assertTrue(noNic.reason().contains("no RDMA device"), noNic.reason());
    }

    @Test
    void thisMachineGetsAnAnswerThatNamesWhatIsMissing() {
        CudaProbe cuda = Cuda.probe();
        DeviceDiscovery rdma = RdmaDevices.discover();
        GpuDirectSupport s = GpuDirect.detect();
        if (!cuda.available() || !rdma.hasDevices()) {
            assertEquals(GpuDirectSupport.Status.UNAVAILABLE, s.status());
        }
        assertEquals(!cuda.available(), s.reason().contains("no GPU"), s.reason());
        assertEquals(!rdma.hasDevices(), s.reason().contains("no RDMA device"), s.reason());
    }

    @Test
    void peerMemModuleIsFoundInSysfsOrProcModules(@TempDir Path dir) throws IOException {
        Path sys = Files.createDirectories(dir.resolve("sys"));
        Path proc = dir.resolve("modules");
        Files.writeString(proc, "nvidia_uvm 1830912 0 - Live 0x0\nnvidia 56799232 1 nvidia_uvm, Live 0x0\n");
        assertEquals(Optional.empty(), PeerMemModule.loaded(sys, proc), "nvidia alone is not nvidia_peermem");
        Files.writeString(proc, "nv_peer_mem 16384 0 - Live 0x0\nib_core 1 2 - Live 0x0\n");
        assertEquals(Optional.of("nv_peer_mem"), PeerMemModule.loaded(sys, proc));
        Files.createDirectories(sys.resolve("nvidia_peermem"));
        assertEquals(Optional.of("nvidia_peermem"), PeerMemModule.loaded(sys, dir.resolve("absent")));
    }
}
