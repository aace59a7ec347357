package io.rdma4j.collectives.scenario;

import io.rdma4j.collectives.Algorithm;
import io.rdma4j.collectives.Communicator;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;

/**
 * Entry point of one rank in multi-process tests: builds the communicator from the environment
 * (env://, as a launcher sets it) and runs the scenarios named in the arguments, e.g.
 * {@code full split large algo=twohop faults=mismatch-count}. Prints "SCENARIO OK cases=N" and
 * exits 0, or prints every failure and exits 1.
 */
public final class ScenarioMain {
    private ScenarioMain() {
    }

    public static void main(String[] args) {
        long start = System.nanoTime();
        List<String> failures = new ArrayList<>();
        int cases = 0;
        int code = 0;
        java.util.Map<String, String> env = new java.util.HashMap<>(System.getenv());
        String perHost = env.get("RDMA4J_TEST_RANKS_PER_HOST");
        if (perHost != null) { // pretend to be on host rank / perHost (two-hop tests on one machine)
            env.put("RDMA4J_HOST_ID", "host" + Integer.parseInt(env.get("RANK")) / Integer.parseInt(perHost));
        }
        try (Communicator comm = Communicator.fromEnvironment(env)) {
            if (perHost != null && !comm.algorithmFor(8L << 20).equals(Algorithm.TWO_HOP)) {
                throw new AssertionError("two-hop not available on " + comm.topology());
            }
            for (String arg : args) {
                if (arg.startsWith("faults=")) {
                    FaultScenarios.run(comm, arg.substring(7));
                    cases++;
                    continue;
                }
                if (arg.equals("bucketer")) {
                    cases += BucketerScenario.run(comm, failures);
                    continue;
                }
                long max = arg.equals("large") ? (64L << 20) + 64 : arg.startsWith("algo=") ? 16L << 20 : 4L << 20;
                try (Arena arena = Arena.ofShared()) {
                    MatrixScenario m = new MatrixScenario(comm, arena, max);
                    switch (arg) {
                        case "full" -> m.full(Integer.bitCount(comm.size()) == 1);
                        case "reduced" -> m.reduced();
                        case "large" -> m.large();
                        case "split" -> m.split();
                        default -> {
                            if (arg.startsWith("algo=")) {
                                m.algorithms(Algorithm.parse(arg.substring(5)));
                            } else {
                                throw new IllegalArgumentException("unknown scenario " + arg);
                            }
                        }
                    }
                    failures.addAll(m.failures());
                    cases += m.cases();
                    comm.barrier(); // nobody frees buffers a peer may still read
                }
            }
        } catch (Throwable t) {
            System.out.println("rank " + System.getenv("RANK") + " threw:");
            t.printStackTrace(System.out);
            code = 1;
        }
        for (String f : failures) {
            System.out.println("FAIL " + f);
        }
        if (!failures.isEmpty()) {
            code = 1;
        }
        if (code == 0) {
            System.out.printf("SCENARIO OK cases=%d in %.1f s%n", cases, (System.nanoTime() - start) / 1e9);
        }
        System.out.flush();
        System.exit(code);
    }
}
