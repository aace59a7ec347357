package io.rdma4j.bench.launch;

import io.rdma4j.nativesupport.internal.OnlineCpus;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Binds each rank of a benchmark job to a CPU ({@code taskset -c}): a CPU of its own when the
 * ranks fit the allowed CPUs, as mpirun does by default, and rank r to the (r mod CPUs)-th
 * allowed CPU when they outnumber them. Unbound, two busy-polling ranks on a 2-CPU host shared
 * one CPU for a whole run in about one launch of three (2 MiB allreduce ~1 ms instead of
 * ~140 us; `ps -o psr` showed both on CPU 0 throughout, and pinning them afterwards with taskset
 * ended it in 6 of 6 runs). Four unbound ranks on 2 CPUs ran each size in one of two modes, as
 * the scheduler happened to move them: the shm allreduce of 8 B-4 KiB took 1.5-1.8 us in one
 * and 2.3-3.6 in the other, from one size to the next of the same run; bound two to a CPU they
 * took 1.35-1.54 us at 8 B in every run, and over TCP 18-19 us at 8 B-512 B and 52-53 us at
 * 32 KiB where unbound ones took 19-30 and 79-87 (two runs each, the modes taking turns;
 * 16 KiB-16 MiB over shm unchanged). To re-measure, run the job with {@code RDMA4J_BIND=none}
 * beside the default. {@code RDMA4J_BIND=none} turns binding off, {@code core} (the default)
 * binds when {@code taskset} is on the PATH and either two or more CPUs are allowed or a single
 * rank runs on the one allowed CPU.
 */
final class CoreBinding {
    private final List<Integer> cpus;

    private CoreBinding(List<Integer> cpus) {
        this.cpus = cpus;
    }

    /** The binding for a job of {@code ranks}; {@link #none()} when it does not apply. */
    static CoreBinding forJob(int ranks, Map<String, String> env) {
        String mode = env.getOrDefault("RDMA4J_BIND", "core").trim().toLowerCase(Locale.ROOT);
        if (mode.equals("none")) {
            return none();
        }
        if (!mode.equals("core")) {
            throw new IllegalArgumentException("RDMA4J_BIND must be core or none, was '" + mode + "'");
        }
        List<Integer> allowed = allowedCpus();
        if (allowed.isEmpty() || allowed.size() == 1 && ranks > 1 || !onPath("taskset", env.get("PATH"))) {
            return none();
        }
        List<Integer> cpus = new ArrayList<>(ranks);
        for (int r = 0; r < ranks; r++) {
            cpus.add(allowed.get(r % allowed.size()));
        }
        return new CoreBinding(cpus);
    }

    static CoreBinding none() {
        return new CoreBinding(List.of());
    }

    boolean binds() {
        return !cpus.isEmpty();
    }

    /** {@code command}, run on local rank {@code rank}'s CPU when binding. */
    List<String> command(int rank, List<String> command) {
        if (!binds()) {
            return command;
        }
        List<String> c = new ArrayList<>(List.of("taskset", "-c", Integer.toString(cpus.get(rank))));
        c.addAll(command);
        return c;
    }

    /** The CPUs this process may run on, from /proc/self/status (empty where unknown). */
    static List<Integer> allowedCpus() {
        return OnlineCpus.list(OnlineCpus.allowedList());
    }

    private static boolean onPath(String program, String path) {
        if (path == null) {
            return false;
        }
        for (String dir : path.split(File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, program))) {
                return true;
            }
        }
        return false;
    }
}
