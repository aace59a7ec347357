package io.rdma4j.bench;

import io.rdma4j.bench.launch.ExitStatus;

/**
 * {@code bin/rdma4j collective-perf --op-kind reducescatter|allgather|broadcast|allreduce}: the
 * same benchmark as allreduce-perf for the other collectives.
 */
public final class CollectivePerf {
    private CollectivePerf() {
    }

    public static void main(String[] args) {
        ExitStatus.exit(() -> new PerfTool("collective-perf", null, CollectivePerf.class)
                .run(args, System.getenv(), System.out, System.err));
    }
}
