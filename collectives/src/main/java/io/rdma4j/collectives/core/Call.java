package io.rdma4j.collectives.core;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.collectives.reduce.Reducer;
import io.rdma4j.transport.RegisteredBuffer;

/**
 * The arguments of one collective call as algorithms see them: registered buffers with byte
 * offsets (heap arrays have been copied into registered scratch by then), element count and
 * type, operator, root. Mutable and reused by its communicator.
 *
 * <p>Count conventions (as NCCL): allreduce/broadcast/reduce: elements of the buffer;
 * reduce-scatter: elements each rank receives (send holds {@code count * size}); allgather:
 * elements each rank sends (receive holds {@code count * size}); all-to-all: elements per peer.
 */
public final class Call {
    public final Descriptor identity = new Descriptor();
    public DataType type;
    public ReduceOp op;
    public Reducer reducer;
    public long count;
    public int root = -1;
    public RegisteredBuffer send;
    public long sendOff;
    public RegisteredBuffer recv;
    public long recvOff;
    /** Divisor of AVG (the communicator's size). */
    public int contributors;

    public int elemBytes() {
        return type == null ? 1 : type.byteSize();
    }

    public boolean inPlace() {
        return send == recv && sendOff == recvOff;
    }
}
