package io.rdma4j.nativesupport.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * How many CPUs the machine has online, whatever this process's affinity: a rank bound to a core
 * of its own ({@code taskset}, mpirun's binding) sees one CPU in
 * {@link Runtime#availableProcessors()}, although the machine's other cores run its peers. Also
 * reads the Linux CPU lists that say so ({@link #list}), for whoever needs the CPUs themselves.
 */
public final class OnlineCpus {
    private static final Path ONLINE = Path.of("/sys/devices/system/cpu/online");
    private static final int COUNT = read(ONLINE);

    private OnlineCpus() {
    }

    /** The machine's online CPUs, or 0 when Linux does not say (not Linux, no /sys). */
    public static int count() {
        return COUNT;
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
        try {
            return list(Files.readString(file).trim()).size();
        } catch (IOException | SecurityException unreadable) {
            return 0;
        }
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
