package io.rdma4j.bench.coll;

import io.rdma4j.bench.check.TestPattern;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;

/** allreduce: every rank ends with the reduction of all ranks' buffers. */
public final class AllReduceBench implements BenchCollective {
    @Override
    public String name() {
        return "allreduce";
    }

    @Override
    public boolean reduces() {
        return true;
    }

    @Override
    public boolean rooted() {
        return false;
    }

    /** A ring allreduce moves 2(n-1)/n of the data over each rank's link. */
    @Override
    public double busFactor(int ranks) {
        return 2.0 * (ranks - 1) / ranks;
    }

    @Override
    public long count(long bytes, int elementSize, int ranks) {
        return bytes / elementSize;
    }

    @Override
    public long sendElements(long count, int ranks) {
        return count;
    }

    @Override
    public long recvElements(long count, int ranks) {
        return count;
    }

    @Override
    public long algBytes(long count, int elementSize, int ranks) {
        return count * elementSize;
    }

    @Override
    public Slots slots(MemorySegment sendBuf, MemorySegment recvBuf, long count, int elementSize, int rank,
                       int ranks, boolean inPlace) {
        MemorySegment recv = recvBuf.asSlice(0, count * elementSize);
        return new Slots(inPlace ? recv : sendBuf.asSlice(0, count * elementSize), recv);
    }

    @Override
    public void run(Communicator comm, Slots s, long count, DataType type, ReduceOp op, int root) {
        comm.allReduce(s.send(), s.recv(), count, type, op);
    }

    @Override
    public double expected(TestPattern pattern, int rank, int ranks, int root, long count, long index) {
        return pattern.reduced(ranks, index);
    }
}
