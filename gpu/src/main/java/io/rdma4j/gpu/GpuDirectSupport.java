package io.rdma4j.gpu;

/**
 * Whether an RDMA NIC can read and write GPU memory directly (GPUDirect RDMA), by which
 * mechanism, and why (not). {@code reason} is a sentence a user can act on.
 */
public record GpuDirectSupport(Status status, String reason) {

    public enum Status {
        /** GPU memory exported as a dma-buf (cuMemGetHandleForAddressRange) registers with ibv_reg_dmabuf_mr. */
        AVAILABLE_DMABUF,
        /** The nvidia_peermem kernel module lets ibv_reg_mr register device pointers directly. */
        AVAILABLE_PEERMEM,
        /** Neither: device buffers go through pinned host memory (the staged path). */
        UNAVAILABLE
    }

    public boolean available() {
        return status != Status.UNAVAILABLE;
    }

    @Override
    public String toString() {
        return status + ": " + reason;
    }
}
