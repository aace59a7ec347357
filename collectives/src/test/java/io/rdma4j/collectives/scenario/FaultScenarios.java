package io.rdma4j.collectives.scenario;

import io.rdma4j.collectives.CollectiveException;
import io.rdma4j.collectives.CollectiveMismatchException;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.CommunicatorAbortedException;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.collectives.Work;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

/**
 * Fault cases, run by every rank; each rank checks that it failed the way it should (exception
 * type, blamed rank, within the communicator's timeout) and prints "FAULT OK". Anything else
 * throws, failing the launch.
 */
final class FaultScenarios {
    private FaultScenarios() {
    }

    static void run(Communicator comm, String which) throws Exception {
        int r = comm.rank();
        int n = comm.size();
        long timeoutMs = comm.options().timeout().toMillis();
        long start = System.nanoTime();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(64L << 20, 64);
            Throwable got = null;
            try {
                switch (which) {
                    case "mismatch-count" -> comm.allReduce(buf, buf, r == 1 ? 101 : 100, DataType.F32, ReduceOp.SUM);
                    case "mismatch-eager" -> // one side takes the eager small-vector path, the other not
                            comm.allReduce(buf, buf, r == 0 ? 100 : 100_000, DataType.F32, ReduceOp.SUM, io.rdma4j.collectives.Algorithm.RHD);
                    case "mismatch-dtype" -> comm.allReduce(buf, buf, 64, r == 0 ? DataType.F32 : DataType.I32, ReduceOp.SUM);
                    case "mismatch-op" -> comm.allReduce(buf, buf, 64, DataType.F32, r == 0 ? ReduceOp.SUM : ReduceOp.MAX);
                    case "mismatch-kind" -> {
                        if (r == n - 1) {
                            comm.broadcast(buf, 64, DataType.F32, 0);
                        } else {
                            comm.allReduce(buf, buf, 64, DataType.F32, ReduceOp.SUM);
                        }
                    }
                    case "death" -> {
                        comm.allReduce(buf, buf, 1000, DataType.F32, ReduceOp.SUM); // everybody connected
                        if (r == 2) {
                            Work w = comm.allReduceAsync(buf, buf, 16L << 20, DataType.F32, ReduceOp.SUM);
                            Thread.sleep(30);
                            System.out.println("rank 2 halts now (work done: " + w.isDone() + ")");
                            System.out.flush();
                            Runtime.getRuntime().halt(3);
                        }
                        for (int i = 0; i < 50; i++) {
                            comm.allReduce(buf, buf, 16L << 20, DataType.F32, ReduceOp.SUM);
                        }
                    }
                    case "death-small" -> { // the shared-window path (shm) or eager messages (tcp)
                        comm.allReduce(buf, buf, 1000, DataType.F32, ReduceOp.SUM);
                        if (r == 2) {
                            System.out.println("rank 2 halts now");
                            System.out.flush();
                            Runtime.getRuntime().halt(3);
                        }
                        for (int i = 0; i < 50; i++) {
                            comm.allReduce(buf, buf, 1000, DataType.F32, ReduceOp.SUM);
                        }
                    }
                    case "hang" -> { // rank 2 is alive but never joins: the others time out blaming it
                        comm.barrier();
                        if (r == 2) {
                            Thread.sleep(timeoutMs + 3000);
                            comm.barrier(); // by now the others posted their timeout
                        } else {
                            comm.allReduce(buf, buf, 1000, DataType.F32, ReduceOp.SUM);
                        }
                    }
                    case "abort" -> {
                        comm.barrier(); // connected and in step; then rank 0 stays away and aborts
                        if (r == 0) {
                            Thread.sleep(1500);
                            comm.abort();
                            Work w = comm.allReduceAsync(buf, buf, 10, DataType.F32, ReduceOp.SUM);
                            w.await(Duration.ofSeconds(5)); // must fail at once
                        } else {
                            comm.allReduce(buf, buf, 1000, DataType.F32, ReduceOp.SUM); // rank 0 never joins
                        }
                    }
                    case "abort-local" -> {
                        if (r == 0) {
                            Work w = comm.allReduceAsync(buf, buf, 1000, DataType.F32, ReduceOp.SUM); // nobody joins
                            Thread.sleep(500);
                            long t0 = System.nanoTime();
                            new Thread(comm::abort).start();
                            try {
                                w.await(Duration.ofSeconds(5));
                            } finally {
                                System.out.printf("abort unblocked the pending work in %.0f ms%n", (System.nanoTime() - t0) / 1e6);
                            }
                        } else {
                            Thread.sleep(1000);
                            comm.barrier();
                        }
                    }
                    default -> throw new IllegalArgumentException("unknown fault scenario " + which);
                }
            } catch (CollectiveException e) {
                got = e;
            }
            double secs = (System.nanoTime() - start) / 1e9;
            if (got == null) {
                throw new AssertionError("rank " + r + ": fault scenario " + which + " did not fail");
            }
            System.out.println("rank " + r + " failed as expected after " + secs + " s: " + got);
            if (secs * 1000 > timeoutMs + 10_000) {
                throw new AssertionError("took " + secs + " s, timeout is " + timeoutMs + " ms");
            }
            switch (which) {
                case "death", "death-small" -> {
                    if (((CollectiveException) got).failedRank() != 2) {
                        throw new AssertionError("rank " + r + " blamed rank " + ((CollectiveException) got).failedRank()
                                + " instead of the dead rank 2", got);
                    }
                    if (!got.getMessage().contains("rank 2")) {
                        throw new AssertionError("message does not name rank 2: " + got.getMessage());
                    }
                }
                case "hang" -> {
                    if (!(got instanceof io.rdma4j.collectives.CollectiveTimeoutException)
                            || ((CollectiveException) got).failedRank() != 2) {
                        throw new AssertionError("rank " + r + " expected a timeout blaming rank 2, got " + got, got);
                    }
                }
                case "abort", "abort-local" -> {
                    if (!(got instanceof CommunicatorAbortedException) || ((CollectiveException) got).failedRank() != 0) {
                        throw new AssertionError("rank " + r + " expected an abort by rank 0, got " + got, got);
                    }
                }
                default -> {
                    if (!(got instanceof CollectiveMismatchException)) {
                        throw new AssertionError("rank " + r + " expected a mismatch, got " + got, got);
                    }
                    if (!got.getMessage().contains("mismatch")) {
                        throw new AssertionError("unclear message: " + got.getMessage());
                    }
                }
            }
            // the communicator stays broken
            try {
                comm.barrier();
                throw new AssertionError("a broken communicator accepted another collective");
            } catch (CollectiveException expected) {
                // fine
            }
            System.out.println("FAULT OK " + which);
        }
    }
}
