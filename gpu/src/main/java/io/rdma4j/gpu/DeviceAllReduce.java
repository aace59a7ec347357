package io.rdma4j.gpu;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.cuda.CudaContext;
import io.rdma4j.cuda.CudaEvent;
import io.rdma4j.cuda.CudaStream;
import io.rdma4j.cuda.DeviceBuffer;
import io.rdma4j.cuda.PinnedHostBuffer;
import io.rdma4j.nativesupport.NativeResource;

import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Allreduce of device memory ({@link DeviceBuffer}) over a {@link Communicator}, in place. The
 * path is decided once, when this is created, and logged ({@link #path()}): staged through
 * host memory (see {@link DevicePath} for why, even with GPUDirect RDMA).
 *
 * <p>Staged path: the buffer is cut into chunks of {@link #chunkBytes()}; each goes device ->
 * pinned host slot (D2H on this instance's stream), is allreduced on the host by the
 * communicator (the slot's registration is cached by the transport, so a step registers
 * nothing), and goes back (H2D on the same stream). Two slots pipeline it: the D2H copy of chunk
 * k + 1 is queued before chunk k is allreduced, so the PCIe copy overlaps the network, and the
 * H2D copy of chunk k overlaps the allreduce of chunk k + 1. A slot is refilled only after the
 * H2D copy that drained it, which one in-order stream guarantees without host waits.
 *
 * <p>Every rank must call with the same count, type, op and chunk size (the chunks are the
 * communicator's collectives; a mismatch is reported by it). The caller's own writes to the
 * buffer must be complete before the call (synchronize the stream that produced them); when the
 * call returns, the result is in device memory. One call at a time per instance.
 */
public final class DeviceAllReduce implements AutoCloseable {
    /** Large enough that the per-collective latency is small against the copy, small enough to overlap. */
    public static final long DEFAULT_CHUNK_BYTES = 4L << 20;
    private static final int SLOTS = 2;
    private static final System.Logger LOG = System.getLogger(DeviceAllReduce.class.getName());

    private final Communicator comm;
    private final CudaContext context;
    private final long chunkBytes;
    private final DevicePath path;
    private final PinnedHostBuffer bounce;
    private final MemorySegment bounceMemory;
    private final MemorySegment[] slots = new MemorySegment[SLOTS];
    private final CudaEvent[] copiedOut = new CudaEvent[SLOTS];
    private final CudaStream stream;
    private boolean closed;

    /** With {@link #DEFAULT_CHUNK_BYTES} chunks. */
    public DeviceAllReduce(Communicator comm, CudaContext context) {
        this(comm, context, DEFAULT_CHUNK_BYTES);
    }

    /**
     * @param context    the context of the device buffers this will reduce (the rank's GPU)
     * @param chunkBytes bytes per pipeline step, a multiple of 8 (so that a chunk is whole
     *                   elements of every type), at least 64; the same on every rank
     */
    public DeviceAllReduce(Communicator comm, CudaContext context, long chunkBytes) {
        this(comm, context, chunkBytes, GpuDirect.detect(context.device().ordinal(), null));
    }

    DeviceAllReduce(Communicator comm, CudaContext context, long chunkBytes, GpuDirectSupport gpuDirect) {
        if (chunkBytes < 64 || (chunkBytes & 7) != 0 || chunkBytes > Long.MAX_VALUE / SLOTS) {
            throw new IllegalArgumentException("chunk bytes must be a multiple of 8, >= 64: " + chunkBytes);
        }
        this.comm = comm;
        this.context = context;
        this.chunkBytes = chunkBytes;
        this.path = DevicePath.forAllReduce(comm.provider(), gpuDirect);
        PinnedHostBuffer b = context.allocatePinned(chunkBytes * SLOTS);
        CudaStream s = null;
        try {
            s = context.createStream();
            for (int i = 0; i < SLOTS; i++) {
                copiedOut[i] = context.createEvent(false);
            }
        } catch (RuntimeException e) {
            RuntimeException closing = closeAll(copiedOut, s, b);
            if (closing != null) {
                e.addSuppressed(closing);
            }
            throw e;
        }
        this.bounce = b;
        this.bounceMemory = b.segment();
        for (int i = 0; i < SLOTS; i++) {
            slots[i] = bounceMemory.asSlice(i * chunkBytes, chunkBytes);
        }
        this.stream = s;
        LOG.log(Level.INFO, "rank {0}: allreduce on device buffers of {1}: {2}", comm.rank(), context.device(), path);
    }

    /** The path every allreduce of this instance takes, and why. */
    public DevicePath path() {
        return path;
    }

    public long chunkBytes() {
        return chunkBytes;
    }

    /**
     * Replaces the first {@code count} elements of {@code buffer} with their reduction over all
     * ranks; returns when the result is in device memory.
     *
     * @throws IllegalArgumentException for a buffer of another context, null type or op, or a
     *                                  count that does not fit the buffer
     * @throws IllegalStateException    when the buffer was freed or this instance is closed
     */
    public synchronized void allReduce(DeviceBuffer buffer, long count, DataType type, ReduceOp op) {
        long bytes = check(buffer, count, type, op);
        if (bytes == 0 || comm.size() == 1) {
            return;
        }
        long timeout = comm.options().timeout().toNanos();
        long perChunk = chunkBytes / type.byteSize();
        long chunks = (count + perChunk - 1) / perChunk;
        try {
            copyOut(buffer, 0, bytes);
            for (long k = 0; k < chunks; k++) {
                if (k + 1 < chunks) {
                    copyOut(buffer, k + 1, bytes);
                }
                int s = (int) (k % SLOTS);
                copiedOut[s].synchronize(timeout);
                long n = Math.min(perChunk, count - k * perChunk);
                comm.allReduce(slots[s], slots[s], n, type, op);
                buffer.copyFromHostAsync(bounceMemory, s * chunkBytes, k * chunkBytes, n * type.byteSize(), stream);
            }
            stream.synchronize(timeout);
        } catch (RuntimeException e) {
            // copies may still be queued against the bounce buffer: let them finish before
            // anyone frees it
            try {
                stream.synchronize(timeout);
            } catch (RuntimeException drain) {
                e.addSuppressed(drain);
            }
            throw e;
        }
    }

    /** Queues the D2H copy of chunk {@code k} into its slot and marks its end. */
    private void copyOut(DeviceBuffer buffer, long k, long bytes) {
        int s = (int) (k % SLOTS);
        buffer.copyToHostAsync(k * chunkBytes, bounceMemory, s * chunkBytes, Math.min(chunkBytes, bytes - k * chunkBytes),
                stream);
        copiedOut[s].record(stream);
    }

    private long check(DeviceBuffer buffer, long count, DataType type, ReduceOp op) {
        if (closed) {
            throw new IllegalStateException("DeviceAllReduce (rank " + comm.rank() + ") is closed");
        }
        if (buffer == null || type == null || op == null) {
            throw new IllegalArgumentException("buffer, data type and reduce op must not be null");
        }
        if (buffer.isClosed()) {
            throw new IllegalStateException("cannot allreduce " + buffer + ": its memory was freed");
        }
        if (!buffer.context().sameContextAs(context)) {
            throw new IllegalArgumentException(buffer + " is not in " + context + ", the context of this DeviceAllReduce");
        }
        long bytes = type.bytes(count);
        if (bytes > buffer.byteSize()) {
            throw new IllegalArgumentException("allreduce of " + count + " " + type + " elements needs " + bytes
                    + " bytes, but " + buffer + " holds " + buffer.byteSize());
        }
        return bytes;
    }

    /** Frees the stream, events and pinned buffer (idempotent); the communicator stays open. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException failed = closeAll(copiedOut, stream, bounce);
        if (failed != null) {
            throw failed;
        }
    }

    /**
     * Closes the events, the stream and the buffer (nulls skipped), each even when closing one
     * before it failed (each left open would also keep the context's primary retain); returns the
     * first failure, the later ones suppressed in it.
     */
    private static RuntimeException closeAll(CudaEvent[] events, CudaStream stream, PinnedHostBuffer buffer) {
        RuntimeException first = null;
        List<NativeResource> all = new ArrayList<>();
        for (CudaEvent e : events) {
            if (e != null) {
                all.add(e);
            }
        }
        if (stream != null) {
            all.add(stream);
        }
        all.add(buffer);
        for (NativeResource r : all) {
            try {
                r.close();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        return first;
    }
}
