package io.rdma4j.transport.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How many CPUs the processes of a job on this host can share: the CPUs of the cgroup this
 * process runs in (its cpuset, capped by its CPU quota), not this process's own affinity.
 *
 * <p>{@link Runtime#availableProcessors()} reports the affinity, and launchers bind each rank to a
 * core of its own ({@code taskset}, {@code mpirun --bind-to core}, {@code bin/rdma4j}): every rank
 * JVM then sees one CPU, so two ranks with a core each would count as oversubscribing the host
 * and wait as if they shared one. The cgroup's CPUs are what the job's processes may be spread
 * over; where they cannot be read (no cgroup or sysfs files), the affinity is all there is.
 */
public final class HostCpus {
    private static final Path CGROUP = Path.of("/sys/fs/cgroup");
    private static final Path ONLINE = Path.of("/sys/devices/system/cpu/online");
    private static volatile int cached;

    private HostCpus() {
    }

    /** The CPUs this host gives the job (computed once). */
    public static int count() {
        int n = cached;
        if (n == 0) {
            n = count(CGROUP, ONLINE, Runtime.getRuntime().availableProcessors());
            cached = n;
        }
        return n;
    }

    /**
     * The CPUs under {@code cgroup} (a cgroup v2 or v1 mount) or, without a cpuset there, those of
     * {@code online}; capped by the CPU quota; never fewer than {@code affinity} (this process's
     * own, which lies within them) and {@code affinity} when nothing can be read.
     */
    static int count(Path cgroup, Path online, int affinity) {
        int cpus = firstCpuList(cgroup.resolve("cpuset.cpus.effective"),
                cgroup.resolve("cpuset/cpuset.effective_cpus"), cgroup.resolve("cpuset/cpuset.cpus"), online);
        if (cpus <= 0) {
            return affinity;
        }
        int quota = quota(cgroup);
        if (quota > 0) {
            cpus = Math.min(cpus, quota);
        }
        return Math.max(cpus, affinity);
    }

    private static int firstCpuList(Path... files) {
        for (Path f : files) {
            String text = read(f);
            if (text != null) {
                int n = countCpus(text);
                if (n > 0) {
                    return n;
                }
            }
        }
        return -1;
    }

    /** Whole CPUs of the quota, rounded up (a quota of 1.5 CPUs lets two processes run at once part of the time); -1 for none. */
    private static int quota(Path cgroup) {
        String v2 = read(cgroup.resolve("cpu.max"));   // "max 100000" or "200000 100000"
        if (v2 != null) {
            String[] f = v2.trim().split("\\s+");
            return f.length == 2 && !f[0].equals("max") ? wholeCpus(f[0], f[1]) : -1;
        }
        String q = read(cgroup.resolve("cpu/cpu.cfs_quota_us"));   // -1 for none
        String p = read(cgroup.resolve("cpu/cpu.cfs_period_us"));
        return q != null && p != null ? wholeCpus(q.trim(), p.trim()) : -1;
    }

    private static int wholeCpus(String quota, String period) {
        try {
            long q = Long.parseLong(quota);
            long p = Long.parseLong(period);
            return q > 0 && p > 0 ? (int) Math.min(Integer.MAX_VALUE, (q + p - 1) / p) : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** The CPUs in a kernel CPU list ("0-3,8,10-11"); -1 when it is not one. */
    static int countCpus(String list) {
        int n = 0;
        try {
            for (String part : list.trim().split(",")) {
                if (part.isBlank()) {
                    continue;
                }
                int dash = part.indexOf('-');
                int lo = Integer.parseInt(part.substring(0, dash < 0 ? part.length() : dash).trim());
                int hi = dash < 0 ? lo : Integer.parseInt(part.substring(dash + 1).trim());
                if (lo < 0 || hi < lo) {
                    return -1;
                }
                n += hi - lo + 1;
            }
        } catch (NumberFormatException e) {
            return -1;
        }
        return n > 0 ? n : -1;
    }

    private static String read(Path f) {
        try {
            return Files.isReadable(f) ? Files.readString(f) : null;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
