package io.rdma4j.cuda;

import io.rdma4j.nativesupport.internal.LibC;

/**
 * A dma-buf file descriptor exporting device memory (from {@link DeviceBuffer#exportDmaBuf()}),
 * with what ibv_reg_dmabuf_mr needs to register the buffer: the buffer's {@link #offset()} inside
 * the dma-buf, its {@link #length()}, and the address to use as iova (the device address, so
 * peers address GPU memory by its CUdeviceptr, as NCCL does).
 *
 * <p>The registration takes its own reference on the dma-buf, so the fd may be closed once the
 * memory region exists. close() is idempotent.
 */
public final class DmaBuf implements AutoCloseable {
    private final int fd;
    private final long offset;
    private final long length;
    private final long exportedSize;
    private final long iova;
    private volatile boolean closed;

    DmaBuf(int fd, long offset, long length, long exportedSize, long iova) {
        if (fd < 0) {
            throw new IllegalStateException("cuMemGetHandleForAddressRange reported success but returned fd " + fd);
        }
        this.fd = fd;
        this.offset = offset;
        this.length = length;
        this.exportedSize = exportedSize;
        this.iova = iova;
    }

    public int fd() {
        if (closed) {
            throw new IllegalStateException("dma-buf fd " + fd + " is closed");
        }
        return fd;
    }

    /** Where the buffer's first byte is inside the dma-buf. */
    public long offset() {
        return offset;
    }

    /** The buffer's length in bytes. */
    public long length() {
        return length;
    }

    /** The size of the exported range (whole pages around the allocation). */
    public long exportedSize() {
        return exportedSize;
    }

    /** The device address of the buffer's first byte. */
    public long iova() {
        return iova;
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            LibC.close(fd);
        }
    }

    @Override
    public String toString() {
        return "dma-buf fd " + fd + " (buffer at offset " + offset + ", " + length + " bytes of " + exportedSize + ")"
                + (closed ? " (closed)" : "");
    }
}
