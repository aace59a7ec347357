package io.rdma4j.collectives.scenario;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.GradientBucketer;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * GradientBucketer semantics: packing, launch as soon as a bucket is complete (its allreduce
 * finishes while later gradients are still "being produced"), launch strictly in bucket order
 * whatever the ready order, averaged results copied back, reuse across iterations, misuse errors.
 */
final class BucketerScenario {
    private BucketerScenario() {
    }

    static int run(Communicator comm, List<String> failures) {
        int rank = comm.rank();
        int n = comm.size();
        int[] elems = {3000, 5000, 12000, 1, 7000, 9000, 4000, 20000, 333, 6000};
        try (Arena arena = Arena.ofShared()) {
            List<MemorySegment> grads = new ArrayList<>();
            for (int e : elems) {
                grads.add(arena.allocate(e * 4L, 64));
            }
            try (GradientBucketer bk = new GradientBucketer(comm, DataType.F32, grads, 64 * 1024, ReduceOp.AVG)) {
                int last = bk.bucketCount() - 1;
                if (bk.bucketCount() < 3) {
                    failures.add("expected several buckets, got " + bk.bucketCount());
                    return 1;
                }
                for (int iter = 0; iter < 2; iter++) {
                    int id = 9000 + iter;
                    for (int g = 0; g < elems.length; g++) {
                        for (int i = 0; i < elems[g]; i++) {
                            Values.write(grads.get(g), i, DataType.F32, Values.input(rank, id, g * 100_000L + i, DataType.F32, ReduceOp.AVG));
                        }
                    }
                    // bucket 0's gradients first; its allreduce must complete before any other
                    // gradient is produced (overlap with the rest of the backward pass)
                    List<Integer> rest = new ArrayList<>();
                    for (int g = 0; g < elems.length; g++) {
                        if (bk.bucketOf(g) == 0) {
                            bk.markReady(g);
                        } else {
                            rest.add(g);
                        }
                    }
                    if (!bk.isLaunched(0)) {
                        failures.add("bucket 0 complete but its allreduce was not launched");
                    } else {
                        bk.awaitBucket(0, Duration.ofSeconds(30));
                    }
                    // odd ranks produce the rest in reverse order: the last bucket fills first but
                    // must not be launched before its predecessors
                    if (rank % 2 == 1) {
                        java.util.Collections.reverse(rest);
                    }
                    for (int g : rest) {
                        bk.markReady(g);
                        if (rank % 2 == 1 && bk.isLaunched(last) && !bk.isLaunched(last - 1)) {
                            failures.add("bucket " + last + " launched before bucket " + (last - 1));
                        }
                    }
                    try {
                        bk.markReady(rest.get(0));
                        failures.add("marking a gradient twice was accepted");
                    } catch (IllegalStateException expected) {
                        // fine
                    }
                    bk.finish(Duration.ofSeconds(60));
                    for (int g = 0; g < elems.length; g++) {
                        for (int i = 0; i < elems[g]; i++) {
                            long idx = g * 100_000L + i;
                            double want = Values.reference(n, id, idx, DataType.F32, ReduceOp.AVG, (r, x) -> x);
                            double got = Values.read(grads.get(g), i, DataType.F32);
                            if (!Values.close(got, want, DataType.F32, ReduceOp.AVG)) {
                                failures.add("bucketer iteration " + iter + " gradient " + g + " element " + i + " = "
                                        + got + ", want " + want);
                                return 1;
                            }
                        }
                    }
                }
                bk.markReady(0);
                try {
                    bk.finish(Duration.ofSeconds(5));
                    failures.add("finish() with gradients missing was accepted");
                } catch (IllegalStateException expected) {
                    if (!expected.getMessage().contains("gradient 1")) {
                        failures.add("finish() error does not name the missing gradient: " + expected.getMessage());
                    }
                }
            }
            comm.barrier();
        }
        return 2;
    }
}
