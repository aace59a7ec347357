package io.rdma4j.examples;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.transport.RegisteredBuffer;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

public final class Quickstart {
    public static void main(String[] args) {
        // joins the job described by RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, RDMA4J_JOB_TOKEN
        try (Communicator comm = Communicator.fromEnvironment();
             RegisteredBuffer buffer = comm.allocate(1024 * Float.BYTES)) { // registered once, reused
            MemorySegment data = buffer.segment();
            for (long i = 0; i < 1024; i++) {
                data.setAtIndex(ValueLayout.JAVA_FLOAT, i, comm.rank() + 1);
            }
            comm.allReduce(data, DataType.F32, ReduceOp.SUM); // in place, on every rank
            float expected = comm.size() * (comm.size() + 1) / 2f;
            boolean ok = data.getAtIndex(ValueLayout.JAVA_FLOAT, 1023) == expected;
            System.out.println("rank " + comm.rank() + " of " + comm.size() + " over " + comm.provider()
                    + ": sum " + data.getAtIndex(ValueLayout.JAVA_FLOAT, 0) + (ok ? " OK" : " WRONG"));
        }
    }
}
