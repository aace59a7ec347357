package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;

/** The send-queue operations rdma4j posts ({@code enum ibv_wr_opcode}). */
public enum SendOpcode {
    SEND(Verbs.IBV_WR_SEND()),
    SEND_WITH_IMM(Verbs.IBV_WR_SEND_WITH_IMM()),
    RDMA_WRITE(Verbs.IBV_WR_RDMA_WRITE()),
    RDMA_WRITE_WITH_IMM(Verbs.IBV_WR_RDMA_WRITE_WITH_IMM()),
    RDMA_READ(Verbs.IBV_WR_RDMA_READ()),
    ATOMIC_CMP_AND_SWP(Verbs.IBV_WR_ATOMIC_CMP_AND_SWP()),
    ATOMIC_FETCH_AND_ADD(Verbs.IBV_WR_ATOMIC_FETCH_AND_ADD());

    private final int code;

    SendOpcode(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    boolean isRdma() {
        return this == RDMA_WRITE || this == RDMA_WRITE_WITH_IMM || this == RDMA_READ;
    }

    boolean isAtomic() {
        return this == ATOMIC_CMP_AND_SWP || this == ATOMIC_FETCH_AND_ADD;
    }

    boolean carriesImmediate() {
        return this == SEND_WITH_IMM || this == RDMA_WRITE_WITH_IMM;
    }
}
