package io.rdma4j.gpu;


import java.util.Objects;

/**
 * Why an allreduce on device memory is staged through host memory (chunks go device -> pinned
 * host memory, are allreduced on the host, and come back), and what GPUDirect RDMA detection
 * found: a sentence for logs and check reports.
 *
 * <p>Staging is the only path: rdma4j reduces on the CPU (it has no GPU reduction kernels), so
 * every byte of an allreduce must reach host memory whether or not the NIC could read GPU
 * memory directly. With GPUDirect RDMA the data would still have to be reduced where the
 * network puts it, which is why NCCL pairs GPUDirect with reduction kernels; a choice between
 * paths belongs here once such a device-side reducer exists.
 *
 * @param gpuDirect what {@link GpuDirect#detect(int, String)} reported
 * @param reason    why the data is staged
 */
public record DevicePath(GpuDirectSupport gpuDirect, String reason) {

    public DevicePath {
        Objects.requireNonNull(gpuDirect, "gpuDirect");
        Objects.requireNonNull(reason, "reason");
    }

    /**
     * The path of an allreduce on device memory over a transport of provider {@code provider}
     * (tcp, shm, verbs), given GPUDirect RDMA detection's answer.
     */
    public static DevicePath forAllReduce(String provider, GpuDirectSupport gpuDirect) {
        String why;
        if (!"verbs".equals(provider)) {
            why = "the " + provider + " transport moves host memory only (GPUDirect RDMA needs the verbs provider)";
        } else if (!gpuDirect.available()) {
            why = "GPUDirect RDMA is unavailable";
        } else {
            why = "GPUDirect RDMA is available (" + gpuDirect.status() + "), but rdma4j reduces on the CPU (no GPU "
                    + "reduction kernels), so the data must reach host memory anyway";
        }
        return new DevicePath(gpuDirect, why + "; GPUDirect RDMA detection: " + gpuDirect);
    }

    @Override
    public String toString() {
        return "staged through host memory (" + reason + ")";
    }
}
