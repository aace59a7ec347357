package io.rdma4j.verbs;

import io.rdma4j.nativesupport.internal.Checks;

import java.util.Objects;

/**
 * What one side of an RC connection tells the other out of band: its QP number and first packet
 * sequence number, and its address (LID for InfiniBand, GID for RoCE; a null GID means address by
 * LID without a global route header).
 */
public record QpEndpoint(int qpNumber, int psn, int lid, Gid gid) {
    static final int MAX_24_BIT = (1 << 24) - 1;

    public QpEndpoint {
        Checks.inRange("qpNumber", qpNumber, 0, MAX_24_BIT);
        Checks.inRange("psn", psn, 0, MAX_24_BIT);
        Checks.inRange("lid", lid, 0, 0xffff);
    }

    public static QpEndpoint roce(int qpNumber, int psn, Gid gid) {
        return new QpEndpoint(qpNumber, psn, 0, Objects.requireNonNull(gid, "gid"));
    }
}
