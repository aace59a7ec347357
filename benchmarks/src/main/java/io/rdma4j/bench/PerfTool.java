package io.rdma4j.bench;

import io.rdma4j.bench.coll.BenchCollective;
import io.rdma4j.bench.launch.ExitStatus;
import io.rdma4j.bench.launch.LocalJob;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.Store;

import java.io.PrintStream;
import java.util.HashMap;
import java.util.Map;

/**
 * What allreduce-perf and collective-perf share: parse the options, then either launch the
 * local ranks ({@code --ranks N}, or no job in the environment) or, as one rank of a job the
 * environment describes, create the communicator and run the {@link CollectiveBenchmark}.
 */
final class PerfTool {
    private final String tool;
    private final BenchCollective fixed;
    private final Class<?> mainClass;

    PerfTool(String tool, BenchCollective fixed, Class<?> mainClass) {
        this.tool = tool;
        this.fixed = fixed;
        this.mainClass = mainClass;
    }

    /** Runs the tool and returns its exit status. */
    int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        PerfOptions o;
        try {
            o = PerfOptions.parse(args, fixed);
        } catch (IllegalArgumentException e) {
            err.println(tool + ": " + e.getMessage());
            return ExitStatus.USAGE;
        }
        if (o.help) {
            out.print(PerfOptions.usage(tool, fixed == null));
            return ExitStatus.OK;
        }
        Map<String, String> rankEnv = new HashMap<>();
        if (o.transport != null) {
            rankEnv.put(TransportConfig.ENV_TRANSPORT, o.transport);
        }
        if (o.algorithm != null) {
            rankEnv.put("RDMA4J_ALGO", o.algorithm.envName());
        }
        if (o.ranks == 0 && inJob(env)) {
            Map<String, String> merged = new HashMap<>(env);
            merged.putAll(rankEnv);
            return runRank(o, merged, out, err);
        }
        int ranks = o.ranks == 0 ? 2 : o.ranks;
        if (o.collective.rooted() && o.root >= ranks) {
            err.println(tool + ": root " + o.root + " is not one of the " + ranks + " ranks");
            return ExitStatus.USAGE;
        }
        try {
            return new LocalJob(tool, mainClass.getName(), o.forwarded, ranks, rankEnv, out, err).run();
        } catch (RuntimeException e) {
            err.println(tool + ": " + e.getMessage());
            return ExitStatus.FAILED;
        }
    }

    /** Whether the environment makes this process one rank of a job (env://, Open MPI or PMI). */
    static boolean inJob(Map<String, String> env) {
        return (env.containsKey("RANK") && env.containsKey("WORLD_SIZE"))
                || env.containsKey("OMPI_COMM_WORLD_RANK") || env.containsKey("PMI_RANK");
    }

    private int runRank(PerfOptions o, Map<String, String> env, PrintStream out, PrintStream err) {
        JobMembership job = JobMembership.join(tool, env, err);
        if (!job.joined()) {
            return job.failedStatus();
        }
        try (Store store = job.store()) {
            return benchmark(job.comm(), store, o, tool, out, err);
        }
    }

    /**
     * Runs the benchmark as one rank of {@code comm} (closed or aborted here) and returns the
     * rank's exit status: wrong results on a rank that found some, and on rank 0 if any rank did.
     */
    static int benchmark(Communicator comm, Store store, PerfOptions o, String tool, PrintStream out, PrintStream err) {
        try {
            long wrong = new CollectiveBenchmark(comm, store, o, tool, out, err).run();
            comm.close();
            return wrong == 0 ? ExitStatus.OK : ExitStatus.WRONG_RESULTS;
        } catch (IllegalArgumentException e) {
            err.println(tool + ": " + e.getMessage());
            comm.abort(e);
            return ExitStatus.USAGE;
        } catch (RuntimeException | Error e) {
            err.println(tool + ": rank " + comm.rank() + " failed: " + JobMembership.describe(e));
            e.printStackTrace(err);
            comm.abort(e); // tells the other ranks instead of leaving them to time out
            return ExitStatus.FAILED;
        }
    }
}
