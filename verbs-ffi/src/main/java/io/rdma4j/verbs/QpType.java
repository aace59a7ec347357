package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;

/** The queue pair transports rdma4j supports: reliable connected and unreliable datagram. */
public enum QpType {
    RC(Verbs.IBV_QPT_RC()),
    UD(Verbs.IBV_QPT_UD());

    private final int code;

    QpType(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }
}
