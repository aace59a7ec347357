package io.rdma4j.examples;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A smoke test for a deployment: joins the job from the environment (env://, Open MPI or PMI
 * variables), allreduces (sum) a vector whose expected result is known in closed form, checks
 * every element, prints one line, exits 0 (or 1 naming the first wrong element). For checking a
 * multi-host recipe before the real training job:
 * {@code mpirun -np 4 -x MASTER_ADDR -x MASTER_PORT -x RDMA4J_JOB_TOKEN java -cp CP io.rdma4j.examples.AllReduceCheck}.
 * Argument: element count (default 2^20 floats, 4 MiB: several pipeline chunks).
 */
public final class AllReduceCheck {
    private AllReduceCheck() {
    }

    public static void main(String[] args) {
        long count = args.length > 0 ? Long.parseLong(args[0]) : 1 << 20;
        int status;
        try (Communicator comm = Communicator.fromEnvironment(); Arena arena = Arena.ofShared()) {
            MemorySegment data = arena.allocate(count * 4, 64);
            int r = comm.rank();
            int n = comm.size();
            for (long i = 0; i < count; i++) {
                // small integers: every partial sum is exact in f32, whatever the reduction order
                data.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) ((i % 64) + r));
            }
            long bytes = count * 4;
            String algo = comm.algorithmFor(bytes).envName();
            comm.allReduce(data, data, count, DataType.F32, ReduceOp.SUM);
            long bad = -1;
            for (long i = 0; i < count && bad < 0; i++) {
                float expected = (float) (n * (i % 64) + (long) n * (n - 1) / 2);
                if (data.getAtIndex(ValueLayout.JAVA_FLOAT, i) != expected) {
                    bad = i;
                }
            }
            if (bad >= 0) {
                System.out.println("allreduce WRONG at element " + bad + ": " + data.getAtIndex(ValueLayout.JAVA_FLOAT, bad)
                        + " on rank " + r);
                status = 1;
            } else {
                System.out.println("allreduce OK rank " + r + "/" + n + " local " + comm.localRank() + "/" + comm.localSize()
                        + " hosts " + comm.topology().hosts() + " provider " + comm.provider() + " algorithm " + algo
                        + " elements " + count);
                status = 0;
            }
            comm.barrier();
        }
        System.exit(status);
    }
}
