package io.rdma4j.collectives;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Which host each rank runs on, as found by exchanging host identities at start-up. Hosts are
 * numbered in order of their lowest rank; a rank's local rank is its position among the ranks
 * of its host (in rank order). Immutable.
 */
public final class Topology {
    private final int[] hostOf;
    private final int[] localRankOf;
    private final int[][] ranksOfHost;

    /** @param hostIds host identity of every rank (index = rank) */
    public Topology(String[] hostIds) {
        Map<String, List<Integer>> hosts = new LinkedHashMap<>();
        for (int r = 0; r < hostIds.length; r++) {
            hosts.computeIfAbsent(hostIds[r], k -> new ArrayList<>()).add(r);
        }
        hostOf = new int[hostIds.length];
        localRankOf = new int[hostIds.length];
        ranksOfHost = new int[hosts.size()][];
        int h = 0;
        for (List<Integer> ranks : hosts.values()) {
            ranksOfHost[h] = ranks.stream().mapToInt(Integer::intValue).toArray();
            for (int i = 0; i < ranks.size(); i++) {
                hostOf[ranks.get(i)] = h;
                localRankOf[ranks.get(i)] = i;
            }
            h++;
        }
    }

    /** Every rank on one host. */
    public static Topology singleHost(int size) {
        String[] ids = new String[size];
        Arrays.fill(ids, "localhost");
        return new Topology(ids);
    }

    public int size() {
        return hostOf.length;
    }

    public int hosts() {
        return ranksOfHost.length;
    }

    public int hostOf(int rank) {
        return hostOf[rank];
    }

    public int localRank(int rank) {
        return localRankOf[rank];
    }

    public int localSize(int rank) {
        return ranksOfHost[hostOf[rank]].length;
    }

    /** Ranks on host {@code h}, ascending. */
    public int[] ranksOfHost(int h) {
        return ranksOfHost[h].clone();
    }

    /** Whether every host runs the same number of ranks (needed by the two-hop algorithm). */
    public boolean uniform() {
        for (int[] r : ranksOfHost) {
            if (r.length != ranksOfHost[0].length) {
                return false;
            }
        }
        return true;
    }

    @Override
    public String toString() {
        return "Topology{hosts=" + hosts() + ", ranksPerHost=" + Arrays.deepToString(ranksOfHost) + "}";
    }
}
