package io.rdma4j.bench;

/**
 * {@code bin/rdma4j collective-perf --op-kind reducescatter|allgather|broadcast|allreduce}: the
 * same benchmark as allreduce-perf for the other collectives.
 */
public final class CollectivePerf {
    private CollectivePerf() {
    }

    public static void main(String[] args) {
        int status = new PerfTool("collective-perf", null, CollectivePerf.class)
                .run(args, System.getenv(), System.out, System.err);
        System.out.flush();
        System.exit(status);
    }
}
