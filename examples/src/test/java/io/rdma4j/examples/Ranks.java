package io.rdma4j.examples;

import io.rdma4j.launch.Launcher;
import io.rdma4j.launch.LocalRanks;
import io.rdma4j.launch.RankOutcome;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/** Starting ranks of the examples' tests: through the launcher, or by hand with {@link LocalRanks}. */
final class Ranks {
    private Ranks() {
    }

    /** JVM flags that make short-lived test ranks start fast and stay small. */
    static final List<String> SMALL_JVM = List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m");

    /** {@code java} of this JVM with {@link #SMALL_JVM} and {@code args}. */
    static List<String> jvm(String... args) {
        List<String> c = new ArrayList<>();
        c.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        c.addAll(SMALL_JVM);
        c.addAll(List.of(args));
        return c;
    }

    /** {@code java ... -cp <this JVM's class path> mainClass args}. */
    static List<String> java(Class<?> mainClass, String... args) {
        List<String> c = jvm("--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector",
                "-cp", System.getProperty("java.class.path"), mainClass.getName());
        c.addAll(List.of(args));
        return c;
    }

    /** What a launch printed and how it ended. */
    record Launch(int status, String out, String err) {
        String all() {
            return "exit " + status + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    /** Runs {@code rdma4j launch} in this JVM with {@code extraEnv} added to the environment. */
    static Launch launch(Map<String, String> extraEnv, List<String> launcherArgs) throws InterruptedException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Map<String, String> env = new HashMap<>(System.getenv());
        env.putAll(extraEnv);
        int status = Launcher.run(launcherArgs.toArray(String[]::new), env, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Launch(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** Launcher flags for {@code nproc} ranks of {@code mainClass} on this JVM's class path. */
    static List<String> launcherArgs(int nproc, Class<?> mainClass, String... args) {
        List<String> a = new ArrayList<>(List.of("--nproc-per-node", Integer.toString(nproc), "--grace-period", "2"));
        for (String opt : SMALL_JVM) {
            a.add("--java-opt");
            a.add(opt);
        }
        a.add("--main-class");
        a.add(mainClass.getName());
        a.addAll(List.of(args));
        return a;
    }

    /**
     * Starts one process per command with {@link LocalRanks} (the environment set by hand, as
     * an orchestrator would) and waits; returns the outcome and every rank's output.
     */
    static Launch startByHand(int n, IntFunction<List<String>> command, IntFunction<Map<String, String>> env,
                              Duration timeout) throws InterruptedException {
        StringBuffer out = new StringBuffer();
        StringBuffer err = new StringBuffer();
        try (LocalRanks ranks = LocalRanks.builder().ranks(n).command(command).environment(env)
                .gracePeriod(Duration.ofSeconds(2))
                // one append per line: the ranks' reader threads call this at once, and StringBuffer
                // keeps only each single append whole
                .output((rank, stderr, line) -> (stderr ? err : out).append("[rank " + rank + "] " + line + "\n"))
                .start()) {
            RankOutcome o = ranks.await(timeout);
            return new Launch(o.launcherExitStatus(), out.toString(), err + o.detail() + "\n");
        }
    }
}
