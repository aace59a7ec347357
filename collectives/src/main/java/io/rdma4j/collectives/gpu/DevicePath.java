package io.rdma4j.collectives.gpu;

import io.rdma4j.transport.gpu.GpuDirectSupport;

import java.util.Objects;

/**
 * How an allreduce on device memory moves its data, what GPUDirect RDMA detection found, and
 * why that path was chosen (a sentence for logs and check reports).
 *
 * <p>Only {@link Kind#STAGED} exists: rdma4j reduces on the CPU (it has no GPU reduction
 * kernels), so every byte of an allreduce must reach host memory whether or not the NIC could
 * read GPU memory directly. With GPUDirect RDMA the data would still have to be reduced where
 * the network puts it, which is why NCCL pairs GPUDirect with reduction kernels; a
 * {@code GPUDIRECT_*} kind belongs here once such a device-side reducer exists.
 *
 * @param kind      the path taken
 * @param gpuDirect what {@link io.rdma4j.transport.gpu.GpuDirect#detect(int, String)} reported
 * @param reason    why {@code kind} was chosen
 */
public record DevicePath(Kind kind, GpuDirectSupport gpuDirect, String reason) {

    public enum Kind {
        /** Chunks go device -> pinned host memory (D2H), are allreduced on the host, and come back (H2D). */
        STAGED
    }

    public DevicePath {
        Objects.requireNonNull(kind, "kind");
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
        return new DevicePath(Kind.STAGED, gpuDirect, why + "; GPUDirect RDMA detection: " + gpuDirect);
    }

    @Override
    public String toString() {
        return kind + " (" + reason + ")";
    }
}
