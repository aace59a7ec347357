package io.rdma4j.collectives;

import io.rdma4j.collectives.scenario.ScenarioMain;
import io.rdma4j.transport.testing.RankProcesses;
import io.rdma4j.transport.testing.TimeLimits;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs {@link ScenarioMain} in {@code n} separate JVMs (one launch runs a whole matrix) over a
 * provider and asserts that every rank reported success; the ranks' output is shown on failure.
 */
final class MultiProcessHarness {
    private MultiProcessHarness() {
    }

    /** Overrides the test default of tiny chunks with the library's defaults. */
    static final Map<String, String> DEFAULT_CHUNKING = Map.of("RDMA4J_CHUNK_BYTES", "262144", "RDMA4J_WINDOW", "4");

    static Map<String, String> env(String provider, Map<String, String> extra) {
        Map<String, String> env = new HashMap<>();
        env.put("RDMA4J_TRANSPORT", provider);
        env.put("RDMA4J_IDLE_STRATEGY", "backoff");
        env.put("RDMA4J_TIMEOUT_MS", "60000");
        // small chunks and window so that modest counts exercise multi-chunk pipelines and slot reuse
        env.put("RDMA4J_CHUNK_BYTES", "4096");
        env.put("RDMA4J_WINDOW", "2");
        env.putAll(extra);
        return env;
    }

    /**
     * Runs a fault scenario; ranks that are expected to die (the dead rank of "death") may exit
     * non-zero, every other rank must exit 0 having printed its verdict. Returns the outputs
     * (null for a rank that died on purpose).
     */
    static String[] runFault(int n, String provider, Map<String, String> extra, Duration limit, String which)
            throws Exception {
        try (RankProcesses ranks = RankProcesses.launch(n, ScenarioMain.class, env(provider, extra), "faults=" + which)) {
            String[] out = new String[n];
            long deadline = System.nanoTime() + TimeLimits.scaled(limit).toNanos();
            for (int r = 0; r < n; r++) {
                Process p = ranks.process(r);
                if (!p.waitFor(Math.max(1, deadline - System.nanoTime()), java.util.concurrent.TimeUnit.NANOSECONDS)) {
                    throw new AssertionError("rank " + r + " hung in fault scenario " + which + ":\n" + ranks.output(r));
                }
                boolean diesOnPurpose = which.startsWith("death") && r == 2;
                if (diesOnPurpose) {
                    continue;
                }
                out[r] = ranks.output(r);
                if (p.exitValue() != 0) {
                    throw new AssertionError("rank " + r + " exited with " + p.exitValue() + ":\n" + out[r]);
                }
            }
            System.out.println(provider + " n=" + n + " fault " + which + ": "
                    + out[0].lines().filter(l -> l.contains("failed as expected")).findFirst().orElse(""));
            return out;
        }
    }

    /** Runs a fault scenario and asserts that every surviving rank printed "FAULT OK which". */
    static void expectFault(int n, String provider, Map<String, String> extra, Duration limit, String which)
            throws Exception {
        String[] out = runFault(n, provider, extra, limit, which);
        for (int r = 0; r < out.length; r++) {
            if (out[r] != null) {
                int rr = r;
                assertTrue(out[r].contains("FAULT OK " + which), () -> "rank " + rr + ":\n" + out[rr]);
            }
        }
    }

    static String[] run(int n, String provider, Map<String, String> extra, Duration limit, String... scenarios)
            throws Exception {
        try (RankProcesses ranks = RankProcesses.launch(n, ScenarioMain.class, env(provider, extra), scenarios)) {
            ranks.awaitSuccess(limit);
            String[] out = new String[n];
            for (int r = 0; r < n; r++) {
                out[r] = ranks.output(r);
                assertTrue(out[r].contains("SCENARIO OK"), () -> "rank output:\n" + ranks.output(0));
            }
            System.out.println(provider + " n=" + n + " " + String.join(" ", scenarios) + ": "
                    + out[0].lines().filter(l -> l.contains("SCENARIO OK")).findFirst().orElse(""));
            return out;
        }
    }
}
