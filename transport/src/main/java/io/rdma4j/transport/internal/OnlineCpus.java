package io.rdma4j.transport.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How many CPUs the machine has online, whatever this process's affinity: a rank bound to a core
 * of its own ({@code taskset}, mpirun's binding) sees one CPU in
 * {@link Runtime#availableProcessors()}, although the machine's other cores run its peers.
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
            return parse(Files.readString(file).trim());
        } catch (IOException | SecurityException unreadable) {
            return 0;
        }
    }

    /** The CPUs of a Linux CPU list such as {@code 0-3,8,10-11}; 0 for a malformed one. */
    static int parse(String list) {
        int count = 0;
        try {
            for (String part : list.split(",")) {
                int dash = part.indexOf('-');
                int first = Integer.parseInt(dash < 0 ? part : part.substring(0, dash));
                int last = dash < 0 ? first : Integer.parseInt(part.substring(dash + 1));
                if (first < 0 || last < first) {
                    return 0;
                }
                count += last - first + 1;
            }
        } catch (NumberFormatException malformed) {
            return 0;
        }
        return count;
    }
}
