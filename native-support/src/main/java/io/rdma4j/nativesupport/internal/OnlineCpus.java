package io.rdma4j.nativesupport.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * How many CPUs the machine has online, whatever this process's affinity: a rank bound to a core
 * of its own ({@code taskset}, mpirun's binding) sees one CPU in
 * {@link Runtime#availableProcessors()}, although the machine's other cores run its peers. A
 * container's CPU limit counts, though (a Kubernetes pod of 2 CPUs on a node of 64 runs its ranks
 * on 2; a Slurm job its CPU set): the CPU quotas and CPU sets of its control groups.
 * Also reads the Linux CPU lists that say so ({@link #list}), for whoever needs the CPUs themselves.
 */
public final class OnlineCpus {
    private static final Path ONLINE = Path.of("/sys/devices/system/cpu/online");
    private static final Path STATUS = Path.of("/proc/self/status");
    private static final int COUNT = limited(read(ONLINE),
            cgroupLimit(Path.of("/sys/fs/cgroup"), text(Path.of("/proc/self/cgroup"))));

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
     * The CPUs the control groups of this process let it use, 0 when none limits them: the
     * lowest of the limits set in its own group and in each group above it (a quota set on a
     * Kubernetes pod holds for its containers), as {@code membership} (the text of
     * {@code /proc/self/cgroup}) names them under {@code root}, and in {@code root} itself (inside a
     * cgroup namespace, a container's own group is the root it sees).
     */
    static int cgroupLimit(Path root, String membership) {
        int limit = limited(groupLimit(root), groupLimit(root.resolve("cpu")));
        limit = limited(limit, groupLimit(root.resolve("cpuset")));
        for (String line : membership.split("\n")) {
            String[] f = line.split(":", 3); // v2: 0::/path; v1: id:cpu,cpuacct:/path
            if (f.length != 3) {
                continue;
            }
            String group = f[2].trim().replaceFirst("^/+", "");
            if (f[1].isEmpty()) {
                limit = limited(limit, ancestryLimit(root, group));
            }
            for (String controller : f[1].split(",")) {
                if (controller.equals("cpu") || controller.equals("cpuset")) {
                    limit = limited(limit, ancestryLimit(root.resolve(controller), group));
                }
            }
        }
        return limit;
    }

    /** The lowest limit in {@code group} under {@code base} and the groups between them; 0 for none. */
    private static int ancestryLimit(Path base, String group) {
        int limit = 0;
        Path dir;
        try {
            dir = base.resolve(group).normalize();
        } catch (java.nio.file.InvalidPathException malformed) {
            return 0;
        }
        for (; dir != null && dir.startsWith(base) && !dir.equals(base); dir = dir.getParent()) {
            limit = limited(limit, groupLimit(dir));
        }
        return limit;
    }

    /**
     * The CPUs one control group's own files allow: its CPU quota rounded up (cgroup v2
     * {@code cpu.max}, v1 {@code cpu.cfs_quota_us} over {@code cpu.cfs_period_us}) and its CPU set
     * ({@code cpuset.cpus.effective}, v1 {@code cpuset.effective_cpus}), the lower of those set; 0
     * when none is (no limit, no such files, or unreadable).
     */
    private static int groupLimit(Path dir) {
        int limit = 0;
        String[] max = text(dir.resolve("cpu.max")).split("\\s+");
        if (max.length == 2) {
            limit = limited(limit, quota(max[0], max[1]));
        }
        limit = limited(limit, quota(text(dir.resolve("cpu.cfs_quota_us")), text(dir.resolve("cpu.cfs_period_us"))));
        limit = limited(limit, read(dir.resolve("cpuset.cpus.effective")));
        return limited(limit, read(dir.resolve("cpuset.effective_cpus")));
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

    /**
     * Whether processes with these CPU affinities (one Linux CPU list each, as
     * {@link #allowedList()} reads it) can each run on CPUs of its own: no CPU in two of them, and
     * not more of them than the machine, or its container, may keep busy ({@link #count()}). Bound
     * ranks ({@code taskset}, {@code mpirun --bind-to core}) see one CPU each and cannot tell this
     * from their own affinity; ranks that share an affinity (unbound, or all bound to one CPU) are
     * not, whatever its size; an unknown or malformed list says no.
     */
    public static boolean eachOnOwnCpus(List<String> cpuLists) {
        return eachOnOwnCpus(cpuLists, COUNT);
    }

    static boolean eachOnOwnCpus(List<String> cpuLists, int machineCpus) {
        if (machineCpus > 0 && cpuLists.size() > machineCpus) {
            return false;
        }
        BitSet taken = new BitSet();
        for (String cpuList : cpuLists) {
            List<Integer> cpus = list(cpuList);
            if (cpus.isEmpty()) {
                return false;
            }
            for (int c : cpus) {
                if (taken.get(c)) {
                    return false;
                }
                taken.set(c);
            }
        }
        return true;
    }

    /**
     * This process's CPU affinity as Linux writes it ({@code Cpus_allowed_list} of
     * {@code /proc/self/status}, e.g. {@code 0-3}), "" where it does not say.
     */
    public static String allowedList() {
        return allowedList(text(STATUS));
    }

    static String allowedList(String status) {
        for (String line : status.split("\n")) {
            if (line.startsWith("Cpus_allowed_list:")) {
                return line.substring(line.indexOf(':') + 1).trim();
            }
        }
        return "";
    }

    static int read(Path file) {
        return list(text(file)).size();
    }

    /** Above any CPU number Linux gives (its NR_CPUS is at most 8192): a list naming one is malformed. */
    static final int MAX_CPU = 65535;

    /**
     * The CPUs of a Linux CPU list such as {@code 0-3,8,10-11} (as {@code /sys} and
     * {@code /proc/self/status} write them), in its order; empty for a malformed one (also one
     * naming a CPU above {@link #MAX_CPU}: such a list comes from no kernel, and another rank's
     * published affinity must not make this one expand billions of numbers).
     */
    public static List<Integer> list(String cpuList) {
        List<Integer> cpus = new ArrayList<>();
        try {
            for (String part : cpuList.split(",")) {
                int dash = part.indexOf('-');
                int first = Integer.parseInt((dash < 0 ? part : part.substring(0, dash)).trim());
                int last = dash < 0 ? first : Integer.parseInt(part.substring(dash + 1).trim());
                if (first < 0 || last < first || last > MAX_CPU) {
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
