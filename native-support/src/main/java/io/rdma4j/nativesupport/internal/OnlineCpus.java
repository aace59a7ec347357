package io.rdma4j.nativesupport.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * How many CPUs the machine has online, whatever this process's affinity: a rank bound to a core
 * of its own ({@code taskset}, mpirun's binding) sees one CPU in
 * {@link Runtime#availableProcessors()}, although the machine's other cores run its peers. A
 * container's CPU limit counts, though (a Kubernetes pod of 2 CPUs on a node of 64 runs its ranks
 * on 2): its control group's CPU quota and CPU set, as the container sees them at its cgroup root.
 * Also reads the Linux CPU lists that say so ({@link #list}), for whoever needs the CPUs themselves.
 */
public final class OnlineCpus {
    private static final Path ONLINE = Path.of("/sys/devices/system/cpu/online");
    private static final Path CGROUP = Path.of("/sys/fs/cgroup");
    private static final int COUNT = limited(read(ONLINE), cgroupLimit(CGROUP));

    private OnlineCpus() {
    }

    /**
     * The machine's online CPUs, or as many as this process's container may use if fewer; 0 when
     * Linux does not say (not Linux, no /sys).
     */
    public static int count() {
        return COUNT;
    }

    /** {@code online}, lowered to {@code limit} when that is set (> 0) and lower. */
    static int limited(int online, int limit) {
        return limit > 0 && (online == 0 || limit < online) ? limit : online;
    }

    /**
     * The CPUs the control group at {@code root} lets its processes use: its CPU quota rounded up
     * (cgroup v2 {@code cpu.max}, v1 {@code cpu/cpu.cfs_quota_us} over its period) and its CPU set
     * ({@code cpuset.cpus.effective}, v1 {@code cpuset/cpuset.effective_cpus}), the lower of those
     * set; 0 when none is (no limit, no such files, or unreadable).
     */
    static int cgroupLimit(Path root) {
        int limit = 0;
        String[] max = text(root.resolve("cpu.max")).split("\\s+");
        if (max.length == 2) {
            limit = limited(limit, quota(max[0], max[1]));
        }
        limit = limited(limit, quota(text(root.resolve("cpu/cpu.cfs_quota_us")), text(root.resolve("cpu/cpu.cfs_period_us"))));
        limit = limited(limit, list(text(root.resolve("cpuset.cpus.effective"))).size());
        return limited(limit, list(text(root.resolve("cpuset/cpuset.effective_cpus"))).size());
    }

    /** CPUs of {@code quota} per {@code period} microseconds, rounded up; 0 for none ("max", -1) or malformed. */
    private static int quota(String quota, String period) {
        try {
            long q = Long.parseLong(quota);
            long p = Long.parseLong(period);
            return q > 0 && p > 0 ? (int) Math.min(Integer.MAX_VALUE, (q + p - 1) / p) : 0;
        } catch (NumberFormatException none) {
            return 0;
        }
    }

    private static String text(Path file) {
        try {
            return Files.readString(file).trim();
        } catch (IOException | SecurityException unreadable) {
            return "";
        }
    }

    /**
     * Whether {@code pollers} processes outnumber every CPU the machine has online (and this
     * process's own), so that they certainly take turns on its cores; false when the machine
     * does not say.
     */
    public static boolean outnumberedBy(int pollers) {
        return outnumberedBy(pollers, COUNT, Runtime.getRuntime().availableProcessors());
    }

    static boolean outnumberedBy(int pollers, int online, int ownCpus) {
        return online > 0 && pollers > Math.max(online, ownCpus);
    }

    static int read(Path file) {
        return list(text(file)).size();
    }

    /**
     * The CPUs of a Linux CPU list such as {@code 0-3,8,10-11} (as {@code /sys} and
     * {@code /proc/self/status} write them), in its order; empty for a malformed one.
     */
    public static List<Integer> list(String cpuList) {
        List<Integer> cpus = new ArrayList<>();
        try {
            for (String part : cpuList.split(",")) {
                int dash = part.indexOf('-');
                int first = Integer.parseInt((dash < 0 ? part : part.substring(0, dash)).trim());
                int last = dash < 0 ? first : Integer.parseInt(part.substring(dash + 1).trim());
                if (first < 0 || last < first) {
                    return List.of();
                }
                for (int c = first; c <= last; c++) {
                    cpus.add(c);
                }
            }
        } catch (NumberFormatException malformed) {
            return List.of();
        }
        return cpus;
    }
}
