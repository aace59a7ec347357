package io.rdma4j.collectives;

import io.rdma4j.nativesupport.internal.OnlineCpus;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Where the ranks run, as they tell each other at start-up: each rank's host identity (the
 * {@link Topology}) and its CPU affinity. The affinities say whether the ranks of one host are
 * bound to CPUs of their own, which none of them can tell from its own affinity alone.
 */
final class HostPlacement {
    /** Between the host identity and the CPU list in a rank's published value (a CPU list has no line break). */
    private static final char SEPARATOR = '\n';

    private final Topology topology;
    private final String[] cpuLists;

    private HostPlacement(Topology topology, String[] cpuLists) {
        this.topology = topology;
        this.cpuLists = cpuLists;
    }

    /** What this rank publishes: its host identity and its CPU affinity. */
    static String encode(String hostId, String cpuList) {
        return hostId + SEPARATOR + cpuList;
    }

    /** The placement from every rank's published value (index = rank). */
    static HostPlacement decode(String[] values) {
        String[] ids = new String[values.length];
        String[] cpus = new String[values.length];
        for (int r = 0; r < values.length; r++) {
            int cut = values[r].lastIndexOf(SEPARATOR);
            ids[r] = cut < 0 ? values[r] : values[r].substring(0, cut);
            cpus[r] = cut < 0 ? "" : values[r].substring(cut + 1); // "": unknown, so not bound apart
        }
        return new HostPlacement(new Topology(ids), cpus);
    }

    /** Ranks of one process, or whose placement nobody exchanged: one host, affinities unknown. */
    static HostPlacement singleHost(int size) {
        String[] unknown = new String[size];
        Arrays.fill(unknown, "");
        return new HostPlacement(Topology.singleHost(size), unknown);
    }

    Topology topology() {
        return topology;
    }

    /** Whether the ranks on {@code rank}'s host are bound to CPUs none of the others may use ({@link OnlineCpus#eachOnOwnCpus}). */
    boolean eachOnOwnCpus(int rank) {
        List<String> local = new ArrayList<>();
        for (int r : topology.ranksOfHost(topology.hostOf(rank))) {
            local.add(cpuLists[r]);
        }
        return OnlineCpus.eachOnOwnCpus(local);
    }
}
