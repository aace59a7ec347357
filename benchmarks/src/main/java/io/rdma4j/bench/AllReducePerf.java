package io.rdma4j.bench;

import io.rdma4j.bench.launch.ExitStatus;

import io.rdma4j.bench.coll.BenchCollective;

/** {@code bin/rdma4j allreduce-perf}: nccl-tests' all_reduce_perf on rdma4j (see {@link PerfOptions#usage}). */
public final class AllReducePerf {
    private AllReducePerf() {
    }

    public static void main(String[] args) {
        ExitStatus.exit(() -> new PerfTool("allreduce-perf", BenchCollective.named("allreduce"), AllReducePerf.class)
                .run(args, System.getenv(), System.out, System.err));
    }
}
