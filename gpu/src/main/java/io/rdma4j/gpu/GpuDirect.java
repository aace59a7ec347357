package io.rdma4j.gpu;

import io.rdma4j.cuda.Cuda;
import io.rdma4j.cuda.CudaContext;
import io.rdma4j.cuda.CudaDevice;
import io.rdma4j.cuda.CudaException;
import io.rdma4j.cuda.CudaProbe;
import io.rdma4j.cuda.DeviceBuffer;
import io.rdma4j.cuda.DmaBuf;
import io.rdma4j.verbs.Access;
import io.rdma4j.verbs.DeviceContext;
import io.rdma4j.verbs.DeviceDiscovery;
import io.rdma4j.verbs.MemoryRegion;
import io.rdma4j.verbs.ProtectionDomain;
import io.rdma4j.verbs.RdmaDevices;
import io.rdma4j.verbs.VerbsException;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Detects GPUDirect RDMA the way NCCL chooses it: dma-buf first (upstream kernel interface,
 * needs no extra module), proven by actually registering exported GPU memory with
 * ibv_reg_dmabuf_mr; else the nvidia_peermem module; else unavailable, and the transport stages
 * device buffers through pinned host memory. Never throws; every "no" carries the reason.
 */
public final class GpuDirect {
    /** Size of the probe allocation: one 2 MiB GPU page, so the export is page aligned. */
    static final long PROBE_BYTES = 2L << 20;

    private GpuDirect() {
    }

    /** Detection for CUDA device 0 and the first RDMA device. */
    public static GpuDirectSupport detect() {
        return detect(0, null);
    }

    /**
     * Detection for CUDA device {@code cudaOrdinal} and the RDMA device {@code rdmaDevice} (null:
     * the first one).
     */
    public static GpuDirectSupport detect(int cudaOrdinal, String rdmaDevice) {
        return decide(new SystemFacts(cudaOrdinal, rdmaDevice));
    }

    /** What detection needs to know about the machine; the real answers, or a test's. */
    interface Facts {
        CudaProbe cuda();

        DeviceDiscovery rdma();

        /** Empty when GPU memory registered through dma-buf, else why it did not. */
        Optional<String> dmaBufRegistrationFailure();

        Optional<String> peerMemModule();
    }

    static GpuDirectSupport decide(Facts facts) {
        CudaProbe cuda = facts.cuda();
        DeviceDiscovery rdma = facts.rdma();
        List<String> missing = new ArrayList<>();
        if (!cuda.available()) {
            missing.add("no GPU (" + cuda.status() + ": " + cuda.explanation() + ")");
        }
        if (!rdma.hasDevices()) {
            missing.add("no RDMA device (" + rdma.status() + ": " + rdma.explanation() + ")");
        }
        if (!missing.isEmpty()) {
            return new GpuDirectSupport(GpuDirectSupport.Status.UNAVAILABLE, String.join("; ", missing));
        }
        Optional<String> dmaBufFailure = facts.dmaBufRegistrationFailure();
        if (dmaBufFailure.isEmpty()) {
            return new GpuDirectSupport(GpuDirectSupport.Status.AVAILABLE_DMABUF,
                    "GPU memory exported with cuMemGetHandleForAddressRange registered with ibv_reg_dmabuf_mr");
        }
        Optional<String> module = facts.peerMemModule();
        if (module.isPresent()) {
            return new GpuDirectSupport(GpuDirectSupport.Status.AVAILABLE_PEERMEM, "kernel module " + module.get()
                    + " is loaded, so ibv_reg_mr registers device memory (dma-buf: " + dmaBufFailure.get() + ")");
        }
        return new GpuDirectSupport(GpuDirectSupport.Status.UNAVAILABLE, "dma-buf registration failed ("
                + dmaBufFailure.get() + ") and no peer-memory module is loaded (sudo modprobe nvidia_peermem, "
                + "shipped with the NVIDIA driver >= 465); device buffers take the staged path through pinned host memory");
    }

    /** The machine's answers. */
    private record SystemFacts(int cudaOrdinal, String rdmaDevice) implements Facts {
        @Override
        public CudaProbe cuda() {
            return Cuda.probe();
        }

        @Override
        public DeviceDiscovery rdma() {
            return RdmaDevices.discover();
        }

        @Override
        public Optional<String> peerMemModule() {
            return PeerMemModule.loaded();
        }

        @Override
        public Optional<String> dmaBufRegistrationFailure() {
            try {
                CudaDevice gpu = Cuda.device(cudaOrdinal);
                if (!gpu.dmaBufSupported()) {
                    return Optional.of(gpu.name() + " reports CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 0 (needs the "
                            + "NVIDIA open kernel modules, driver >= 515, and Linux >= 5.12)");
                }
                try (CudaContext ctx = gpu.retainPrimaryContext();
                     DeviceBuffer memory = ctx.allocate(PROBE_BYTES);
                     DmaBuf dmaBuf = memory.exportDmaBuf();
                     DeviceContext nic = RdmaDevices.open(rdmaDevice);
                     ProtectionDomain pd = nic.allocateProtectionDomain()) {
                    MemoryRegion mr = pd.registerDmabuf(dmaBuf.fd(), dmaBuf.offset(), dmaBuf.length(), dmaBuf.iova(),
                            Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
                    mr.close();
                    return Optional.empty();
                }
            } catch (CudaException | VerbsException e) {
                return Optional.of(e.getMessage());
            } catch (RuntimeException e) {
                // detection never throws: whatever else failed is the reason
                return Optional.of(e.toString());
            }
        }
    }
}
