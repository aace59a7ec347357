package io.rdma4j.bench.coll;

import io.rdma4j.bench.check.TestPattern;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;

/** reduce-scatter: rank r ends with block r of the reduction of all ranks' n-block buffers. */
public final class ReduceScatterBench implements BenchCollective {
    @Override
    public String name() {
        return "reducescatter";
    }

    @Override
    public boolean reduces() {
        return true;
    }

    @Override
    public boolean rooted() {
        return false;
    }

    /** Each rank sends (n-1) of its n blocks once. */
    @Override
    public double busFactor(int ranks) {
        return (double) (ranks - 1) / ranks;
    }

    @Override
    public long count(long bytes, int elementSize, int ranks) {
        return bytes / elementSize / ranks;
    }

    @Override
    public long sendElements(long count, int ranks) {
        return count * ranks;
    }

    @Override
    public long recvElements(long count, int ranks) {
        return count;
    }

    @Override
    public long algBytes(long count, int elementSize, int ranks) {
        return count * elementSize * ranks;
    }

    @Override
    public Slots slots(MemorySegment sendBuf, MemorySegment recvBuf, long count, int elementSize, int rank,
                       int ranks, boolean inPlace) {
        long block = count * elementSize;
        MemorySegment send = sendBuf.asSlice(0, block * ranks);
        // in place the result is block `rank` of the send buffer
        return new Slots(send, inPlace ? send.asSlice(block * rank, block) : recvBuf.asSlice(0, block));
    }

    @Override
    public void run(Communicator comm, Slots s, long count, DataType type, ReduceOp op, int root) {
        comm.reduceScatter(s.send(), s.recv(), count, type, op);
    }

    @Override
    public double expected(TestPattern pattern, int rank, int ranks, int root, long count, long index) {
        return pattern.reduced(ranks, rank * count + index);
    }
}
