package io.rdma4j.collectives;

import java.util.Locale;

/** Allreduce algorithms; the names are those accepted by {@code RDMA4J_ALGO}. */
public enum Algorithm {
    /** Chunked, pipelined ring: reduce-scatter then allgather. Bandwidth-optimal. */
    RING("ring"),
    /** NCCL-style double binary tree, half of the data per tree, pipelined. Latency ~ log n. */
    TREE("tree"),
    /** Rabenseifner recursive halving/doubling (recursive doubling for small data); power-of-two groups. */
    RHD("rhd"),
    /** Hierarchical: intra-host reduce-scatter, inter-host allreduce of each shard, intra-host allgather. */
    TWO_HOP("twohop"),
    /**
     * Ranks of one host over the shared-memory provider (the algorithm needs its shared windows): each rank copies its vector into its
     * shared window; small vectors are then folded by every rank in rank order, larger ones
     * reduce-scattered and allgathered in the windows, piece by piece; no messages at all. World
     * communicators whose transport has a {@link io.rdma4j.transport.SharedWindow}.
     */
    SHARED_WINDOW("window");

    private final String envName;

    Algorithm(String envName) {
        this.envName = envName;
    }

    public String envName() {
        return envName;
    }

    /** Parses {@code ring|tree|rhd|twohop|window} (case-insensitive); rejects anything else with the valid names. */
    public static Algorithm parse(String name) {
        String n = name.trim().toLowerCase(Locale.ROOT);
        for (Algorithm a : values()) {
            if (a.envName.equals(n) || a.name().equalsIgnoreCase(n)) {
                return a;
            }
        }
        throw new IllegalArgumentException("unknown allreduce algorithm '" + name + "' (expected ring, tree, rhd, twohop or window)");
    }
}
