package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;

/** {@code enum ibv_send_flags} bits; combine with {@code |}. */
public final class SendFlags {
    public static final int NONE = 0;
    /** Generate a completion for this request (needed when the QP is not sq_sig_all). */
    public static final int SIGNALED = Verbs.IBV_SEND_SIGNALED();
    /** Wait for earlier RDMA reads/atomics before starting this request. */
    public static final int FENCE = Verbs.IBV_SEND_FENCE();
    /** Ask the receiver's CQ to signal a solicited-only notification. */
    public static final int SOLICITED = Verbs.IBV_SEND_SOLICITED();
    /** Copy the payload into the WQE at post time (up to max_inline_data); no lkey needed. */
    public static final int INLINE = Verbs.IBV_SEND_INLINE();

    private SendFlags() {
    }
}
