package io.rdma4j.verbs;

import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/** One populated entry of a port's GID table. */
public record GidEntry(int port, int index, Gid gid, GidType type) {

    /**
     * The GID to address a RoCE peer with: RoCE v2 (routable, UDP) before v1, and among those an
     * IPv4-mapped one (what rdma_cm and perftest pick for an IPv4 interface) before IPv6/link-local.
     * On InfiniBand the table's first non-zero entry. Empty when the table holds no usable GID.
     */
    public static Optional<GidEntry> preferred(List<GidEntry> table) {
        return table.stream()
                .filter(e -> !e.gid().isZero())
                .min(Comparator.comparingInt(GidEntry::rank).thenComparingInt(GidEntry::index));
    }

    private int rank() {
        int typeRank = switch (type) {
            case ROCE_V2 -> 0;
            case IB -> 1;
            case ROCE_V1 -> 2;
        };
        return typeRank * 2 + (gid.isIpv4Mapped() ? 0 : 1);
    }
}
