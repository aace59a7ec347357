package io.rdma4j.bench;

import io.rdma4j.bench.launch.ExitStatus;
import io.rdma4j.bench.launch.LocalJob;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.Store;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What the tools that run as ranks of one communicator share: {@code --help}, options of the
 * form {@code --name value} ({@code --ranks N} and {@code -t provider} for every tool), usage
 * errors, starting the local ranks when no job is in the environment, and joining the job as one
 * rank when it is.
 */
abstract class CommunicatorTool {
    private final String tool;
    private final String usage;
    private int ranks;
    private String transport;
    private final List<String> forwarded = new ArrayList<>();

    /** @param usage the options after {@code --ranks N} and {@code -t}, as the usage line shows them */
    CommunicatorTool(String tool, int defaultRanks, String usage) {
        this.tool = tool;
        this.ranks = defaultRanks;
        this.usage = "usage: bin/rdma4j " + tool + " [--ranks N] [-t shm|tcp|verbs|auto] " + usage;
    }

    /** Takes one of the tool's own options; throws {@link IllegalArgumentException} for a bad or unknown one. */
    abstract void option(String name, String value);

    /** Checks the options together, after all were taken. */
    abstract void validate();

    /** Runs the tool as rank {@code comm.rank()}; returns its exit status. */
    abstract int runRank(Communicator comm, Store store, PrintStream out);

    /** Runs the tool and returns its exit status. */
    final int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        if (List.of(args).contains("-h") || List.of(args).contains("--help")) {
            out.println(usage);
            return ExitStatus.OK;
        }
        try {
            parse(args);
        } catch (IllegalArgumentException e) {
            err.println(tool + ": " + e.getMessage());
            err.println(usage);
            return ExitStatus.USAGE;
        }
        if (!PerfTool.inJob(env)) {
            Map<String, String> rankEnv = transport == null ? Map.of() : Map.of(TransportConfig.ENV_TRANSPORT, transport);
            return new LocalJob(tool, getClass().getName(), forwarded, ranks, rankEnv, out, err).run();
        }
        Map<String, String> e = new HashMap<>(env);
        if (transport != null) {
            e.put(TransportConfig.ENV_TRANSPORT, transport);
        }
        JobMembership job = JobMembership.join(tool, e, err);
        if (!job.joined()) {
            return job.failedStatus();
        }
        try (Store store = job.store()) { // closed after the abort below has told the others through it
            try {
                int status = runRank(job.comm(), store, out);
                job.comm().close();
                return status;
            } catch (RuntimeException | Error ex) {
                err.println(tool + ": rank " + job.comm().rank() + " failed: " + ex);
                ex.printStackTrace(err);
                job.comm().abort(ex); // tells the other ranks instead of leaving them to time out
                job.comm().close(); // quick after the abort: what was queued fails at once
                return ExitStatus.FAILED;
            }
        }
    }

    private void parse(String[] args) {
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("option " + a + " needs a value");
            }
            String v = args[++i];
            switch (a) {
                case "--ranks" -> ranks = positive(a, v);
                case "-t", "--transport" -> transport = PerfOptions.parseTransport(v);
                default -> {
                    try {
                        option(a, v);
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException("option " + a + " needs a number, got '" + v + "'");
                    }
                    forwarded.add(a); // the ranks get the tool's options; --ranks and -t are the launcher's
                    forwarded.add(v);
                }
            }
        }
        validate();
    }

    static int positive(String option, String v) {
        try {
            int n = Integer.parseInt(v);
            if (n > 0) {
                return n;
            }
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new IllegalArgumentException("option " + option + " needs a positive integer, got '" + v + "'");
    }
}
