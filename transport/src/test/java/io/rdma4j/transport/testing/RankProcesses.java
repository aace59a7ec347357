package io.rdma4j.transport.testing;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.bootstrap.TcpStore;
import io.rdma4j.transport.bootstrap.TcpStoreServer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Starts ranks as separate JVMs for multi-process tests. This process hosts the store server (so
 * tests can talk to the ranks through {@link #store()}); each child gets MASTER_ADDR/MASTER_PORT,
 * RDMA4J_JOB_TOKEN, RANK, WORLD_SIZE, RDMA4J_STORE_SERVER=0 and RDMA4J_TCP_ADDRESS=127.0.0.1, and
 * runs {@code mainClass} (any class on the test classpath) with {@code java.home}'s java, this
 * JVM's class path and --enable-native-access=ALL-UNNAMED. Output of rank r goes to a file
 * ({@link #output(int)}). {@link #close()} kills every child that is still running, always.
 *
 * <p>In the child, {@link #childStore()}, {@link #childRank()} and {@link #childSize()} read that
 * environment.
 *
 * <pre>
 * try (RankProcesses ranks = RankProcesses.launch(2, MyRank.class, Map.of(), "arg")) {
 *     ranks.awaitSuccess(Duration.ofSeconds(30));
 * }
 * </pre>
 */
public final class RankProcesses implements AutoCloseable {
    private final TcpStoreServer server;
    private final String token = UUID.randomUUID().toString();
    private final List<Process> processes = new ArrayList<>();
    private final List<Path> outputs = new ArrayList<>();
    private final Path dir;
    private Store store;

    private RankProcesses(int size, Class<?> mainClass, Map<String, String> env, List<String> ranksToStart, String... args) {
        server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), token);
        try {
            dir = Files.createTempDirectory("rdma4j-ranks");
            for (int r = 0; r < size; r++) {
                outputs.add(dir.resolve("rank" + r + ".log"));
                processes.add(ranksToStart.contains(Integer.toString(r)) ? start(r, size, mainClass, env, args) : null);
            }
        } catch (IOException | RuntimeException e) {
            close();
            throw e instanceof IOException io ? new UncheckedIOException(io) : (RuntimeException) e;
        }
    }

    /** Starts all {@code size} ranks as processes. */
    public static RankProcesses launch(int size, Class<?> mainClass, Map<String, String> env, String... args) {
        List<String> all = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            all.add(Integer.toString(r));
        }
        return new RankProcesses(size, mainClass, env, all, args);
    }

    /**
     * Starts only the ranks in {@code ranks} as processes; the others are played by the test
     * itself (through {@link #store()} and {@link #token()}).
     */
    public static RankProcesses launchSome(int size, List<Integer> ranks, Class<?> mainClass, Map<String, String> env,
                                           String... args) {
        return new RankProcesses(size, mainClass, env, ranks.stream().map(String::valueOf).toList(), args);
    }

    private Process start(int rank, int size, Class<?> mainClass, Map<String, String> env, String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("--add-modules=jdk.incubator.vector"); // the collectives' SIMD kernels, as in production
        cmd.add("-Xmx256m");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.addAll(io.rdma4j.verbs.testing.SoftRoce.childJvmOptions());
        cmd.add("-cp");
        cmd.add(classPath(mainClass));
        cmd.add(mainClass.getName());
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(outputs.get(rank).toFile());
        Map<String, String> e = pb.environment();
        e.put(TcpStore.ENV_MASTER_ADDR, "127.0.0.1");
        e.put(TcpStore.ENV_MASTER_PORT, Integer.toString(server.port()));
        e.put(TcpStore.ENV_JOB_TOKEN, token);
        e.put(TcpStore.ENV_RANK, Integer.toString(rank));
        e.put(TcpStore.ENV_STORE_SERVER, "0");
        e.put("WORLD_SIZE", Integer.toString(size));
        e.put(TransportConfig.ENV_TCP_ADDRESS, "127.0.0.1");
        e.putAll(env);
        return pb.start();
    }

    /**
     * This JVM's class path plus where the main class, the transport classes and the verbs layer
     * (which the verbs provider needs) were loaded from, and every entry of the main class's
     * URL class loaders: a test runner (the JUnit console launcher of scripts/softroce-test) may
     * load the tests and all their dependencies through its own loader, outside java.class.path.
     */
    private static String classPath(Class<?> mainClass) {
        java.util.LinkedHashSet<String> entries = new java.util.LinkedHashSet<>();
        for (ClassLoader l = mainClass.getClassLoader(); l != null; l = l.getParent()) {
            if (l instanceof java.net.URLClassLoader u) {
                for (java.net.URL url : u.getURLs()) {
                    try {
                        entries.add(Path.of(url.toURI()).toString());
                    } catch (Exception | Error ignored) {
                        // not a file: a child JVM could not use it
                    }
                }
            }
        }
        for (Class<?> c : List.of(mainClass, RankProcesses.class, io.rdma4j.transport.Transport.class,
                io.rdma4j.verbs.RdmaDevices.class)) {
            try {
                entries.add(Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
            } catch (Exception | Error ignored) {
                // no code source: it must be on java.class.path
            }
        }
        entries.addAll(List.of(System.getProperty("java.class.path").split(java.io.File.pathSeparator)));
        return String.join(java.io.File.pathSeparator, entries);
    }

    /** A client of the group's store for the test itself. */
    public synchronized Store store() {
        if (store == null) {
            store = TcpStore.builder().address("127.0.0.1").port(server.port()).token(token).timeout(Duration.ofSeconds(30)).build();
        }
        return store;
    }

    public String token() {
        return token;
    }

    public int storePort() {
        return server.port();
    }

    public Process process(int rank) {
        return processes.get(rank);
    }

    public String output(int rank) {
        try {
            return Files.readString(outputs.get(rank));
        } catch (IOException e) {
            return "<no output: " + e + ">";
        }
    }

    /** Runs {@code step}; if it fails, the failure carries rank {@code rank}'s output (why it did not answer). */
    public <T> T withOutputOnFailure(int rank, java.util.concurrent.Callable<T> step) throws Exception {
        try {
            return step.call();
        } catch (Exception | AssertionError e) {
            e.addSuppressed(new Exception("output of rank " + rank + ":\n" + output(rank)));
            throw e;
        }
    }

    /** Kills rank {@code rank} (SIGKILL) and waits for it to be gone. */
    public void kill(int rank) throws InterruptedException {
        Process p = processes.get(rank);
        p.destroyForcibly();
        p.waitFor(10, TimeUnit.SECONDS);
    }

    /**
     * Waits for every started rank to exit 0, within {@code limit} ({@linkplain TimeLimits#scaled
     * scaled} on a slow machine); otherwise fails naming every rank that did not, with each one's
     * output (the first rank to fail is often not the lowest one).
     */
    public void awaitSuccess(Duration limit) throws InterruptedException {
        Duration timeout = TimeLimits.scaled(limit);
        long deadline = System.nanoTime() + timeout.toNanos();
        StringBuilder failed = new StringBuilder();
        for (int r = 0; r < processes.size(); r++) {
            Process p = processes.get(r);
            if (p == null) {
                continue;
            }
            if (!p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                failed.append("rank ").append(r).append(" did not finish within ").append(timeout.toMillis())
                        .append(" ms; output:\n").append(output(r)).append('\n');
            } else if (p.exitValue() != 0) {
                failed.append("rank ").append(r).append(" exited with ").append(p.exitValue()).append("; output:\n")
                        .append(output(r)).append('\n');
            }
        }
        if (!failed.isEmpty()) {
            throw new AssertionError(failed.toString());
        }
    }

    @Override
    public void close() {
        for (Process p : processes) {
            if (p != null && p.isAlive()) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
            }
        }
        for (Process p : processes) {
            if (p != null) {
                try {
                    p.waitFor(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        if (store != null) {
            store.close();
        }
        server.close();
        if (dir != null) {
            for (Path o : outputs) {
                try {
                    Files.deleteIfExists(o);
                } catch (IOException ignored) {
                    // a leftover log in /tmp
                }
            }
            try {
                Files.deleteIfExists(dir);
            } catch (IOException ignored) {
                // a leftover directory in /tmp
            }
        }
    }

    // ---- Child side.

    /** This child's rank (RANK). */
    public static int childRank() {
        return Integer.parseInt(System.getenv(TcpStore.ENV_RANK));
    }

    /** This child's group size (WORLD_SIZE). */
    public static int childSize() {
        return Integer.parseInt(System.getenv("WORLD_SIZE"));
    }

    /** A store client from the environment the launcher set. */
    public static Store childStore() {
        return TcpStore.fromEnvironment();
    }

    /** The transport configuration from the environment, with a loopback TCP address. */
    public static TransportConfig childConfig() {
        return TransportConfig.builder().tcpAddress("127.0.0.1").fromEnvironment().build();
    }
}
