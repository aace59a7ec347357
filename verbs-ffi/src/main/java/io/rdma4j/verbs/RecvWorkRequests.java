package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.ibv_recv_wr;

/** A reusable chain of {@code struct ibv_recv_wr}, posted with one post_recv call. */
public final class RecvWorkRequests extends WorkRequestChain {

    public RecvWorkRequests(int capacity, int maxSge) {
        super("RecvWorkRequests", capacity, maxSge, ibv_recv_wr.layout(), ibv_recv_wr.wr_id$offset(),
                ibv_recv_wr.next$offset(), ibv_recv_wr.next$layout(), ibv_recv_wr.sg_list$offset(),
                ibv_recv_wr.num_sge$offset(), ibv_recv_wr.num_sge$layout());
    }

    /** Appends a receive request; returns its index for {@link #addSge}. */
    public int add(long wrId) {
        return append(wrId);
    }
}
