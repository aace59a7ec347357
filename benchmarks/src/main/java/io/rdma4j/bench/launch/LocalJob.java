package io.rdma4j.bench.launch;

import io.rdma4j.launch.LocalRanks;
import io.rdma4j.launch.RankOutcome;
import io.rdma4j.transport.bootstrap.TcpStore;
import io.rdma4j.transport.bootstrap.TcpStoreServer;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * One benchmark job of N ranks on this host, each a JVM running {@code mainClass} with this
 * JVM's options and class path: what a benchmark tool adds to {@link LocalRanks} (which starts,
 * watches and stops the ranks). The tool serves the bootstrap store itself on a port the kernel
 * picked (so no other process can take a "free" port in between) and hands the ranks the env://
 * contract (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) with a
 * fresh job token.
 *
 * <p>Each rank runs on a CPU of its own when they fit, and they share the CPUs round-robin when
 * they do not ({@link CoreBinding}, {@code RDMA4J_BIND}).
 *
 * <p>Rank 0's lines go to {@code out} and {@code err} as they are (it prints the results); the
 * other ranks' lines go to {@code err} prefixed with {@code [rank r]}. When a rank exits non-zero
 * the others are stopped, the rank is named, and {@link #run} returns a tool status
 * ({@link ExitStatus}).
 */
public final class LocalJob {
    /** How long stopped ranks get to exit before they are killed. */
    private static final Duration STOP_GRACE = Duration.ofSeconds(5);

    private final String tool;
    private final String mainClass;
    private final List<String> args;
    private final int ranks;
    private final Map<String, String> extraEnv;
    private final PrintStream out;
    private final PrintStream err;

    public LocalJob(String tool, String mainClass, List<String> args, int ranks, Map<String, String> extraEnv,
                    PrintStream out, PrintStream err) {
        if (ranks < 1) {
            throw new IllegalArgumentException("a job needs at least 1 rank, got " + ranks);
        }
        this.tool = tool;
        this.mainClass = mainClass;
        this.args = List.copyOf(args);
        this.ranks = ranks;
        this.extraEnv = Map.copyOf(extraEnv);
        this.out = out;
        this.err = err;
    }

    /** Starts every rank, waits for all of them; returns OK, or WRONG_RESULTS / FAILED for the first that failed. */
    public int run() {
        String token = HexFormat.of().formatHex(new SecureRandom().generateSeed(16));
        InetAddress loopback = InetAddress.getLoopbackAddress();
        CoreBinding binding;
        try {
            binding = CoreBinding.forJob(ranks, System.getenv());
        } catch (IllegalArgumentException e) {
            err.println(tool + ": " + e.getMessage());
            return ExitStatus.USAGE;
        }
        List<String> command = command();
        try (TcpStoreServer store = TcpStoreServer.start(new InetSocketAddress(loopback, 0), token);
             LocalRanks job = LocalRanks.builder()
                     .ranks(ranks)
                     .command(r -> binding.command(r, command))
                     .environment(r -> environment(r, loopback.getHostAddress(), store.port(), token))
                     .output(this::line)
                     .gracePeriod(STOP_GRACE)
                     .start()) {
            Thread stopper = new Thread(() -> job.stop(tool + " was terminated"), "rdma4j-launch-stop");
            Runtime.getRuntime().addShutdownHook(stopper); // Ctrl-C must not leave ranks behind
            try {
                return status(job, job.await(LocalRanks.NO_LIMIT));
            } finally {
                try {
                    Runtime.getRuntime().removeShutdownHook(stopper);
                } catch (IllegalStateException shuttingDown) {
                    // the hook is running already
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return ExitStatus.FAILED;
        } catch (RuntimeException e) {
            err.println(tool + ": " + e.getMessage());
            return ExitStatus.FAILED;
        }
    }

    private int status(LocalRanks job, RankOutcome o) {
        switch (o.kind()) {
            case SUCCEEDED -> {
                return ExitStatus.OK;
            }
            case RANK_FAILED -> {
                List<Integer> stopped = new ArrayList<>();
                for (int r = 0; r < o.exitCodes().size(); r++) {
                    if (r != o.rank() && o.exitCodes().get(r) != 0) {
                        stopped.add(r);
                    }
                }
                err.printf("%s: rank %d (pid %d) exited: %s%s%n", tool, o.rank(), job.process(o.rank()).pid(),
                        ExitStatus.describe(o.exitCode()),
                        stopped.isEmpty() ? "" : "; stopped rank(s) " + stopped);
                return o.exitCode() == ExitStatus.WRONG_RESULTS ? ExitStatus.WRONG_RESULTS : ExitStatus.FAILED;
            }
            default -> {
                err.println(tool + ": " + o.detail());
                return ExitStatus.FAILED;
            }
        }
    }

    private void line(int rank, boolean stderr, String line) {
        if (rank == 0) {
            (stderr ? err : out).println(line);
        } else {
            err.println("[rank " + rank + "] " + line);
        }
    }

    private List<String> command() {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java"));
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass);
        cmd.addAll(args);
        return cmd;
    }

    private Map<String, String> environment(int rank, String host, int port, String token) {
        Map<String, String> env = new HashMap<>(extraEnv);
        env.put(TcpStore.ENV_MASTER_ADDR, host);
        env.put(TcpStore.ENV_MASTER_PORT, Integer.toString(port));
        env.put(TcpStore.ENV_JOB_TOKEN, token);
        env.put(TcpStore.ENV_STORE_SERVER, "0"); // this process serves the store
        env.put("RANK", Integer.toString(rank));
        env.put("WORLD_SIZE", Integer.toString(ranks));
        env.put("LOCAL_RANK", Integer.toString(rank));
        env.put("LOCAL_WORLD_SIZE", Integer.toString(ranks));
        return env;
    }
}
