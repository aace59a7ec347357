package io.rdma4j.verbs;

/**
 * The functions of libibverbs and librdmacm that this layer calls, checked when a library
 * loads ({@link NativeLibrary#load}). The generated bindings look a symbol up only at its first
 * call and fail there with a bare {@link UnsatisfiedLinkError} (inside a class initialiser, for
 * the errno-capturing handles), so a library older than rdma4j needs is caught at load instead.
 * The newest of them, {@code ibv_reg_dmabuf_mr}, sets the floor: rdma-core 34.
 * A function the safe layer starts to call belongs here too.
 */
final class RequiredSymbols {
    static final String[] IBVERBS = {
            "ibv_get_device_list", "ibv_free_device_list", "ibv_get_device_name", "ibv_get_device_guid",
            "ibv_open_device", "ibv_close_device", "ibv_query_device", "ibv_query_port", "ibv_query_gid",
            "_ibv_query_gid_ex", "ibv_alloc_pd", "ibv_dealloc_pd", "ibv_reg_mr_iova2", "ibv_reg_dmabuf_mr",
            "ibv_dereg_mr", "ibv_create_comp_channel", "ibv_destroy_comp_channel", "ibv_get_cq_event",
            "ibv_ack_cq_events", "ibv_create_cq", "ibv_destroy_cq", "ibv_create_qp", "ibv_modify_qp",
            "ibv_query_qp", "ibv_destroy_qp", "ibv_create_ah", "ibv_destroy_ah", "ibv_wc_status_str",
    };

    static final String[] RDMACM = {
            "rdma_create_event_channel", "rdma_destroy_event_channel", "rdma_get_cm_event", "rdma_ack_cm_event",
            "rdma_event_str", "rdma_create_id", "rdma_destroy_id", "rdma_migrate_id", "rdma_bind_addr",
            "rdma_resolve_addr", "rdma_resolve_route", "rdma_create_qp", "rdma_destroy_qp", "rdma_connect",
            "rdma_listen", "rdma_accept", "rdma_disconnect", "rdma_get_src_port",
    };

    private RequiredSymbols() {
    }
}
