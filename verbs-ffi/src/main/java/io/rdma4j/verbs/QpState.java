package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;

/** The states of {@code enum ibv_qp_state}. */
public enum QpState {
    RESET(Verbs.IBV_QPS_RESET()),
    INIT(Verbs.IBV_QPS_INIT()),
    READY_TO_RECEIVE(Verbs.IBV_QPS_RTR()),
    READY_TO_SEND(Verbs.IBV_QPS_RTS()),
    SEND_QUEUE_DRAINED(Verbs.IBV_QPS_SQD()),
    SEND_QUEUE_ERROR(Verbs.IBV_QPS_SQE()),
    ERROR(Verbs.IBV_QPS_ERR());

    private final int code;

    QpState(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    public static QpState of(int code) {
        for (QpState s : values()) {
            if (s.code == code) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown ibv_qp_state " + code);
    }
}
