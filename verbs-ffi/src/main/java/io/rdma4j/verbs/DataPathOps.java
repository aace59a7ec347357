package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.ibv_context;
import io.rdma4j.verbs.ffi.ibv_context_ops;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The provider's data-path functions of one device context. ibv_post_send, ibv_post_recv,
 * ibv_poll_cq and ibv_req_notify_cq are static inline in verbs.h (no symbol to bind), so their
 * function pointers are read from {@code context->ops} once here and bound as critical downcalls;
 * nothing is resolved again per call.
 */
final class DataPathOps {
    /** int post_send(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **bad_wr) */
    final MethodHandle postSend;
    /** int post_recv(struct ibv_qp *, struct ibv_recv_wr *, struct ibv_recv_wr **bad_wr) */
    final MethodHandle postRecv;
    /** int poll_cq(struct ibv_cq *, int num_entries, struct ibv_wc *) */
    final MethodHandle pollCq;
    /** int req_notify_cq(struct ibv_cq *, int solicited_only) */
    final MethodHandle reqNotifyCq;

    DataPathOps(MemorySegment context, String device) {
        MemorySegment ops = ibv_context.ops(context);
        postSend = bind(ibv_context_ops.post_send(ops), ibv_context_ops.post_send.descriptor(), "post_send", device);
        postRecv = bind(ibv_context_ops.post_recv(ops), ibv_context_ops.post_recv.descriptor(), "post_recv", device);
        pollCq = bind(ibv_context_ops.poll_cq(ops), ibv_context_ops.poll_cq.descriptor(), "poll_cq", device);
        reqNotifyCq = bind(ibv_context_ops.req_notify_cq(ops), ibv_context_ops.req_notify_cq.descriptor(),
                "req_notify_cq", device);
    }

    private static MethodHandle bind(MemorySegment fn, java.lang.foreign.FunctionDescriptor d, String op, String device) {
        if (fn.equals(MemorySegment.NULL)) {
            throw new VerbsException("the provider of " + device + " has no " + op + " operation");
        }
        return Downcalls.critical(fn, d);
    }
}
