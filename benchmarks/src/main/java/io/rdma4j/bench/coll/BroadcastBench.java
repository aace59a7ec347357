package io.rdma4j.bench.coll;

import io.rdma4j.bench.check.TestPattern;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;

/** broadcast: every rank ends with the root's buffer. The API is in place (one buffer). */
public final class BroadcastBench implements BenchCollective {
    @Override
    public String name() {
        return "broadcast";
    }

    @Override
    public boolean reduces() {
        return false;
    }

    @Override
    public boolean rooted() {
        return true;
    }

    @Override
    public boolean hasOutOfPlace() {
        return false;
    }

    /** A pipelined broadcast moves the data over each link once. */
    @Override
    public double busFactor(int ranks) {
        return 1.0;
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
        MemorySegment data = recvBuf.asSlice(0, count * elementSize);
        return new Slots(data, data);
    }

    @Override
    public void run(Communicator comm, Slots s, long count, DataType type, ReduceOp op, int root) {
        comm.broadcast(s.recv(), count, type, root);
    }

    @Override
    public boolean contributes(int rank, int root) {
        return rank == root;
    }

    @Override
    public double expected(TestPattern pattern, int rank, int ranks, int root, long count, long index) {
        return pattern.input(root, index);
    }
}
