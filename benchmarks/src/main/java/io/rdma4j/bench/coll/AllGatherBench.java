package io.rdma4j.bench.coll;

import io.rdma4j.bench.check.TestPattern;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;

/** allgather: every rank ends with all ranks' blocks, block q from rank q. */
public final class AllGatherBench implements BenchCollective {
    @Override
    public String name() {
        return "allgather";
    }

    @Override
    public boolean reduces() {
        return false;
    }

    @Override
    public boolean rooted() {
        return false;
    }

    /** Each rank receives the (n-1) blocks it does not have. */
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
        return count;
    }

    @Override
    public long recvElements(long count, int ranks) {
        return count * ranks;
    }

    @Override
    public long algBytes(long count, int elementSize, int ranks) {
        return count * elementSize * ranks;
    }

    @Override
    public Slots slots(MemorySegment sendBuf, MemorySegment recvBuf, long count, int elementSize, int rank,
                       int ranks, boolean inPlace) {
        long block = count * elementSize;
        MemorySegment recv = recvBuf.asSlice(0, block * ranks);
        // in place this rank's contribution already sits in block `rank` of the receive buffer
        return new Slots(inPlace ? recv.asSlice(block * rank, block) : sendBuf.asSlice(0, block), recv);
    }

    @Override
    public void run(Communicator comm, Slots s, long count, DataType type, ReduceOp op, int root) {
        comm.allGather(s.send(), s.recv(), count, type);
    }

    @Override
    public double expected(TestPattern pattern, int rank, int ranks, int root, long count, long index) {
        return pattern.input((int) (index / count), index % count);
    }
}
