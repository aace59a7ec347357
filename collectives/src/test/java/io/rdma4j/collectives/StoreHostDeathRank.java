package io.rdma4j.collectives;

import io.rdma4j.transport.bootstrap.TcpStore;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.Map;

/**
 * One rank of {@link StoreHostDeathTest}: joins the job as torchrun's ranks do, rank 0 hosting
 * the store on the port given as the only argument, allreduces 1 MiB until its communicator
 * fails, then prints "FAILED naming rank R: message" and exits 0 (1 if it never failed).
 */
public final class StoreHostDeathRank {
    private StoreHostDeathRank() {
    }

    public static void main(String[] args) {
        Map<String, String> env = new HashMap<>(System.getenv());
        env.remove(TcpStore.ENV_STORE_SERVER); // rank 0 hosts the store (RankProcesses' own server goes unused)
        env.put(TcpStore.ENV_MASTER_PORT, args[0]);
        try (Communicator c = Communicator.fromEnvironment(env); Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(1 << 20, 64);
            c.allReduce(buf, DataType.F32, ReduceOp.SUM);
            System.out.println("READY");
            System.out.flush();
            while (true) {
                c.allReduce(buf, DataType.F32, ReduceOp.SUM);
            }
        } catch (CollectiveException e) {
            System.out.println("FAILED naming rank " + e.failedRank() + ": " + e.getMessage());
            System.out.flush();
            System.exit(0);
        }
        System.exit(1);
    }
}
