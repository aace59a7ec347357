package io.rdma4j.examples;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs helper commands (mpirun, ip) for the recipe tests. */
final class Shell {
    private Shell() {
    }

    record Result(int status, String output) {
    }

    /** Runs {@code cmd} with {@code env} added; stdout and stderr together; killed after {@code limit}. */
    static Result run(List<String> cmd, Map<String, String> env, Duration limit) throws IOException, InterruptedException {
        Path log = Files.createTempFile("rdma4j-cmd", ".log");
        try {
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
            pb.environment().putAll(env);
            Process p = pb.start();
            if (!p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
                return new Result(-1, "TIMED OUT after " + limit.toSeconds() + " s: " + cmd + "\n"
                        + Files.readString(log, StandardCharsets.UTF_8));
            }
            return new Result(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(log);
        }
    }

    /** Runs {@code cmd}; throws with its output unless it exits 0. */
    static String check(List<String> cmd) throws IOException, InterruptedException {
        Result r = run(cmd, Map.of(), Duration.ofSeconds(30));
        if (r.status() != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " exited " + r.status() + ": " + r.output());
        }
        return r.output();
    }

    /** The first executable named {@code name} on PATH (or in sbin), null if none. */
    static Path which(String name) {
        String path = System.getenv().getOrDefault("PATH", "") + ":/usr/sbin:/sbin:/usr/local/sbin";
        for (String dir : path.split(":")) {
            if (!dir.isEmpty()) {
                Path p = Path.of(dir, name);
                if (Files.isExecutable(p)) {
                    return p;
                }
            }
        }
        return null;
    }

    /** This process's real user id, from /proc (Linux). */
    static int uid() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("Uid:")) {
                return Integer.parseInt(line.substring(4).trim().split("\\s+")[0]);
            }
        }
        throw new IOException("no Uid line in /proc/self/status");
    }

    /** A free TCP port on loopback (closed again: a small race, fine for a test). */
    static int freePort() throws IOException {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
