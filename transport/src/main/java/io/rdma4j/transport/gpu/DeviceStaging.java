package io.rdma4j.transport.gpu;

import io.rdma4j.cuda.CudaContext;
import io.rdma4j.cuda.CudaEvent;
import io.rdma4j.cuda.CudaStream;
import io.rdma4j.cuda.DeviceBuffer;
import io.rdma4j.cuda.PinnedHostBuffer;
import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportException;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The staged path for device memory when the NIC cannot reach the GPU (no GPUDirect RDMA):
 * chunks go device -> pinned host bounce buffer -> network on the sending side and network ->
 * bounce buffer -> device on the receiving side, pipelined so that the PCIe copy of one chunk
 * overlaps the network transfer of another (as NCCL's proxy does through its host buffers).
 *
 * <p>The bounce buffer has {@code slots} chunk-sized slots of page-locked memory, registered
 * with the transport once. Sending chunk k: wait until the send that last used slot k % slots
 * completed, queue the D2H copy of chunk k on the stream and record the slot's event, then hand
 * chunk k - 1 (whose copy was queued one step earlier) to the network once its event completed.
 * Receiving: up to {@code slots} receives are posted ahead; each arrived chunk is queued for
 * H2D and its slot is posted again once that copy has drained it.
 *
 * <p>Both sides must use the same chunk size and length (the message boundaries are chunks).
 * One operation at a time per instance; after a failure (a timeout, a peer that died) requests
 * may still be in flight, so the instance refuses further use: close it and abort the group.
 */
public final class DeviceStaging implements AutoCloseable {
    private static final long NONE = -1;

    private final Transport transport;
    private final CudaContext context;
    private final long chunkBytes;
    private final int slots;
    private final PinnedHostBuffer bounce;
    private final RegisteredBuffer registered;
    private final MemorySegment bounceMemory;
    private final CudaStream stream;
    private final CudaEvent[] copied;
    private final long[] requests;
    private boolean broken;
    private boolean closed;

    /**
     * @param chunkBytes bytes per pipeline step (e.g. 1 MiB: large enough for full PCIe and
     *                   network speed, small enough to overlap)
     * @param slots      chunks in flight per direction, >= 2: a slot is refilled only after the
     *                   chunk before it was handed to the network
     */
    public DeviceStaging(Transport transport, CudaContext context, long chunkBytes, int slots) {
        if (chunkBytes <= 0 || slots < 2) {
            throw new IllegalArgumentException("need chunkBytes > 0 and slots >= 2 (one chunk on the PCIe bus while "
                    + "another is on the network), got " + chunkBytes + " and " + slots);
        }
        if (chunkBytes > Long.MAX_VALUE / slots) {
            throw new IllegalArgumentException("bounce buffer of " + slots + " x " + chunkBytes + " bytes overflows");
        }
        this.transport = transport;
        this.context = context;
        this.chunkBytes = chunkBytes;
        this.slots = slots;
        this.copied = new CudaEvent[slots];
        this.requests = new long[slots];
        Arrays.fill(requests, NONE);
        PinnedHostBuffer b = context.allocatePinned(chunkBytes * slots);
        CudaStream s = null;
        RegisteredBuffer r = null;
        try {
            r = transport.register(b.segment());
            s = context.createStream();
            for (int i = 0; i < slots; i++) {
                copied[i] = context.createEvent(false);
            }
        } catch (RuntimeException e) {
            for (CudaEvent ev : copied) {
                if (ev != null) {
                    ev.close();
                }
            }
            if (s != null) {
                s.close();
            }
            if (r != null) {
                r.close();
            }
            b.close();
            throw e;
        }
        this.bounce = b;
        this.registered = r;
        this.bounceMemory = b.segment();
        this.stream = s;
    }

    public long chunkBytes() {
        return chunkBytes;
    }

    public int slots() {
        return slots;
    }

    /**
     * Sends {@code length} bytes of {@code source} at {@code offset} to {@code peer} under
     * {@code tag}, as ceil(length / chunkBytes) messages; returns when all were delivered.
     */
    public void send(Connection peer, DeviceBuffer source, long offset, long length, int tag, long timeoutNanos) {
        begin(source, offset, length);
        long deadline = System.nanoTime() + timeoutNanos;
        long chunks = chunks(length);
        try {
            for (long k = 0; k < chunks; k++) {
                int s = slot(k);
                if (requests[s] != NONE) {
                    transport.await(requests[s], remaining(deadline));
                    requests[s] = NONE;
                }
                source.copyToHostAsync(offset + k * chunkBytes, bounceMemory, s * chunkBytes, chunkLength(k, length),
                        stream);
                copied[s].record(stream);
                if (k > 0) {
                    sendChunk(peer, k - 1, length, tag, deadline);
                }
            }
            if (chunks > 0) {
                sendChunk(peer, chunks - 1, length, tag, deadline);
            }
            drain(deadline);
        } catch (RuntimeException e) {
            broken = true;
            throw e;
        }
    }

    /**
     * Receives {@code length} bytes from {@code peer} under {@code tag} (sent by a peer's
     * {@link #send} with the same chunk size) into {@code target} at {@code offset}; returns when
     * they are in device memory.
     */
    public void receive(Connection peer, DeviceBuffer target, long offset, long length, int tag, long timeoutNanos) {
        begin(target, offset, length);
        long deadline = System.nanoTime() + timeoutNanos;
        long chunks = chunks(length);
        try {
            long posted = 0;
            while (posted < Math.min(slots, chunks)) {
                postReceive(peer, posted++, length, tag);
            }
            peer.flush();
            for (long k = 0; k < chunks; k++) {
                int s = slot(k);
                long n = transport.await(requests[s], remaining(deadline));
                requests[s] = NONE;
                long expected = chunkLength(k, length);
                if (n != expected) {
                    throw new TransportException(peer.peer(), "staged receive from rank " + peer.peer() + ": chunk " + k
                            + " of " + chunks + " has " + n + " bytes, expected " + expected
                            + " (both sides must use the same chunk size and length)");
                }
                target.copyFromHostAsync(bounceMemory, s * chunkBytes, offset + k * chunkBytes, n, stream);
                copied[s].record(stream);
                // Post the next receive into the slot of the previous chunk, whose H2D copy was
                // queued a step ago (so it has most likely drained the slot already).
                if (posted < chunks && posted - slots <= k - 1) {
                    copied[slot(posted)].synchronize(remaining(deadline));
                    postReceive(peer, posted++, length, tag);
                    peer.flush();
                }
            }
            stream.synchronize(remaining(deadline));
        } catch (RuntimeException e) {
            broken = true;
            throw e;
        }
    }

    private void sendChunk(Connection peer, long k, long length, int tag, long deadline) {
        int s = slot(k);
        copied[s].synchronize(remaining(deadline));
        requests[s] = peer.isend(registered, s * chunkBytes, chunkLength(k, length), tag);
        peer.flush();
    }

    private void postReceive(Connection peer, long k, long length, int tag) {
        int s = slot(k);
        requests[s] = peer.irecv(registered, s * chunkBytes, chunkLength(k, length), tag);
    }

    private void drain(long deadline) {
        for (int s = 0; s < slots; s++) {
            if (requests[s] != NONE) {
                transport.await(requests[s], remaining(deadline));
                requests[s] = NONE;
            }
        }
    }

    private void begin(DeviceBuffer buffer, long offset, long length) {
        if (closed || broken) {
            throw new IllegalStateException("DeviceStaging is " + (closed ? "closed" : "unusable after a failed transfer"));
        }
        if (buffer.context() != context) {
            throw new IllegalArgumentException(buffer + " is not in " + context);
        }
        if (offset < 0 || length < 0 || offset > buffer.byteSize() || length > buffer.byteSize() - offset) {
            throw new IndexOutOfBoundsException("range [offset " + offset + ", length " + length + "] is outside "
                    + buffer);
        }
    }

    private long chunks(long length) {
        return (length + chunkBytes - 1) / chunkBytes;
    }

    private long chunkLength(long k, long length) {
        return Math.min(chunkBytes, length - k * chunkBytes);
    }

    private int slot(long k) {
        return (int) (k % slots);
    }

    private static long remaining(long deadline) {
        return Math.max(0, deadline - System.nanoTime());
    }

    /** Frees the stream, events and bounce buffer (idempotent); the registration goes with the transport. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (CudaEvent e : copied) {
            e.close();
        }
        stream.close();
        registered.close();
        bounce.close();
    }
}
