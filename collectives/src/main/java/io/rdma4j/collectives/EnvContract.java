package io.rdma4j.collectives;

import java.util.Map;

/** Reads rank and world size from the launcher conventions: env://, Open MPI, PMI. */
final class EnvContract {
    private EnvContract() {
    }

    static int rank(Map<String, String> env) {
        return first(env, "rank", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK");
    }

    static int size(Map<String, String> env) {
        return first(env, "world size", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE");
    }

    /**
     * The launcher's LOCAL_RANK / LOCAL_WORLD_SIZE (or Open MPI's) are only cross-checked: local
     * ranks come from the host identities the ranks exchanged, which is what the shared-memory
     * grouping must follow. A disagreement usually means ranks of one host report different
     * host names (set RDMA4J_HOST_ID), so it is logged.
     */
    static void checkLocal(Map<String, String> env, int localRank, int localSize, Topology topo) {
        String lr = firstValue(env, "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK");
        String ls = firstValue(env, "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE");
        if ((lr != null && !lr.trim().equals(Integer.toString(localRank)))
                || (ls != null && !ls.trim().equals(Integer.toString(localSize)))) {
            System.getLogger(EnvContract.class.getName()).log(System.Logger.Level.WARNING,
                    "launcher says local rank {0} of {1}, host identities give {2} of {3} ({4}); "
                            + "set RDMA4J_HOST_ID if ranks of one host report different host names",
                    lr, ls, localRank, localSize, topo);
        }
    }

    private static String firstValue(Map<String, String> env, String... names) {
        for (String n : names) {
            String v = env.get(n);
            if (v != null && !v.isBlank()) {
                return v;
            }
        }
        return null;
    }

    private static int first(Map<String, String> env, String what, String... names) {
        for (String n : names) {
            String v = env.get(n);
            if (v != null && !v.isBlank()) {
                try {
                    return Integer.parseInt(v.trim());
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException(n + "=" + v + ": not an integer");
                }
            }
        }
        throw new IllegalArgumentException("no " + what + " in the environment: set one of " + String.join(", ", names));
    }
}
