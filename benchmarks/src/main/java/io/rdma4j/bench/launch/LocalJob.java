package io.rdma4j.bench.launch;

import io.rdma4j.transport.bootstrap.TcpStore;
import io.rdma4j.transport.bootstrap.TcpStoreServer;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Runs one job of N ranks on this host, each a separate JVM running {@code mainClass}, the way
 * torchrun does: every rank gets the env:// contract (MASTER_ADDR, MASTER_PORT, RANK,
 * WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) and a fresh job token. The launcher itself serves
 * the bootstrap store on a port the kernel picked (so there is no window in which another
 * process can take a "free" port), and the ranks connect to it as clients.
 *
 * <p>Rank 0's lines go to {@code out} and {@code err} as they are (it prints the results); the
 * other ranks' lines go to {@code err} prefixed with {@code [rank r]}. When a rank exits with a
 * non-zero status, the others are stopped and {@link #run} returns that status, having said
 * which rank it was.
 */
public final class LocalJob {
    /** How long stopped ranks get to exit before they are killed. */
    private static final long STOP_GRACE_MS = 5_000;

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

    /** Starts every rank, waits for all of them; returns 0 or the status of the first rank that failed. */
    public int run() {
        byte[] secret = new byte[16];
        new SecureRandom().nextBytes(secret);
        String token = HexFormat.of().formatHex(secret);
        InetAddress loopback = InetAddress.getLoopbackAddress();
        try (TcpStoreServer store = TcpStoreServer.start(new InetSocketAddress(loopback, 0), token)) {
            Process[] procs = new Process[ranks];
            List<Thread> pumps = new ArrayList<>();
            Thread stopper = new Thread(() -> stopAll(procs, -1), "rdma4j-launch-stop");
            Runtime.getRuntime().addShutdownHook(stopper); // Ctrl-C must not leave ranks behind
            try {
                for (int r = 0; r < ranks; r++) {
                    procs[r] = start(r, loopback.getHostAddress(), store.port(), token, pumps);
                }
                int status = await(procs);
                for (Thread t : pumps) {
                    t.join(STOP_GRACE_MS);
                }
                return status;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                stopAll(procs, -1);
                return ExitStatus.FAILED;
            } finally {
                try {
                    Runtime.getRuntime().removeShutdownHook(stopper);
                } catch (IllegalStateException shuttingDown) {
                    // the hook is running already
                }
            }
        }
    }

    private Process start(int rank, String host, int port, String token, List<Thread> pumps) {
        List<String> cmd = new ArrayList<>();
        cmd.add(javaExecutable());
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass);
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd);
        Map<String, String> env = pb.environment();
        env.putAll(extraEnv);
        env.put(TcpStore.ENV_MASTER_ADDR, host);
        env.put(TcpStore.ENV_MASTER_PORT, Integer.toString(port));
        env.put(TcpStore.ENV_JOB_TOKEN, token);
        env.put(TcpStore.ENV_STORE_SERVER, "0"); // the launcher serves the store
        env.put("RANK", Integer.toString(rank));
        env.put("WORLD_SIZE", Integer.toString(ranks));
        env.put("LOCAL_RANK", Integer.toString(rank));
        env.put("LOCAL_WORLD_SIZE", Integer.toString(ranks));
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            throw new UncheckedIOException(tool + ": cannot start rank " + rank + " (" + cmd.getFirst() + "): "
                    + e.getMessage(), e);
        }
        try {
            p.getOutputStream().close(); // ranks read no input
        } catch (IOException e) {
            // nothing to close
        }
        String prefix = rank == 0 ? "" : "[rank " + rank + "] ";
        pumps.add(pump(p.getInputStream(), rank == 0 ? out : err, prefix, rank));
        pumps.add(pump(p.getErrorStream(), err, prefix, rank));
        return p;
    }

    private static Thread pump(InputStream in, PrintStream to, String prefix, int rank) {
        return Thread.ofPlatform().daemon().name("rdma4j-launch-out-" + rank).start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    to.println(prefix + line);
                    to.flush();
                }
            } catch (IOException e) {
                // the rank is gone; its exit status tells the story
            }
        });
    }

    /** Waits for every rank; on the first non-zero exit, stops the rest and names the rank. */
    private int await(Process[] procs) throws InterruptedException {
        BlockingQueue<Integer> exited = new LinkedBlockingQueue<>();
        for (int r = 0; r < procs.length; r++) {
            int rank = r;
            procs[r].onExit().thenRun(() -> exited.add(rank));
        }
        int status = ExitStatus.OK;
        for (int remaining = procs.length; remaining > 0; remaining--) {
            int r = exited.take();
            int code = procs[r].exitValue();
            if (code != ExitStatus.OK && status == ExitStatus.OK) {
                status = code == ExitStatus.WRONG_RESULTS ? code : ExitStatus.FAILED;
                List<Integer> alive = new ArrayList<>();
                for (int q = 0; q < procs.length; q++) {
                    if (procs[q].isAlive()) {
                        alive.add(q);
                    }
                }
                err.printf("%s: rank %d (pid %d) exited: %s%s%n", tool, r, procs[r].pid(), ExitStatus.describe(code),
                        alive.isEmpty() ? "" : "; stopping rank(s) " + alive);
                stopAll(procs, r);
            }
        }
        return status;
    }

    /** SIGTERM to every live rank, SIGKILL to those still alive after the grace period. */
    private static void stopAll(Process[] procs, int except) {
        for (int q = 0; q < procs.length; q++) {
            if (q != except && procs[q] != null && procs[q].isAlive()) {
                procs[q].destroy();
            }
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STOP_GRACE_MS);
        for (Process p : procs) {
            if (p == null) {
                continue;
            }
            try {
                long left = deadline - System.nanoTime();
                if (left <= 0 || !p.waitFor(left, TimeUnit.NANOSECONDS)) {
                    p.destroyForcibly();
                }
            } catch (InterruptedException e) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    private static String javaExecutable() {
        return ProcessHandle.current().info().command()
                .orElse(System.getProperty("java.home") + "/bin/java");
    }
}
