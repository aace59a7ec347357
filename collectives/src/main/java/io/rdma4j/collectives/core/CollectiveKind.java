package io.rdma4j.collectives.core;

/** What a descriptor describes; the codes travel on the wire. */
public enum CollectiveKind {
    ALL_REDUCE,
    REDUCE_SCATTER,
    ALL_GATHER,
    BROADCAST,
    REDUCE,
    BARRIER,
    ALL_TO_ALL,
    SEND_RECV,
    /** Sub-phases of the hierarchical allreduce, each with its own handshake. */
    TWO_HOP_LOCAL_REDUCE_SCATTER,
    TWO_HOP_CROSS_ALL_REDUCE,
    TWO_HOP_LOCAL_ALL_GATHER,
    /** Internal exchange of split colours/keys. */
    SPLIT;

    static CollectiveKind fromCode(int code) {
        CollectiveKind[] v = values();
        return code >= 0 && code < v.length ? v[code] : null;
    }
}
