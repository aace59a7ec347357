package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.*;

import java.util.List;

import static io.rdma4j.verbs.NativeLayoutTest.field;
import static io.rdma4j.verbs.NativeLayoutTest.size;

/** The rdma_cm part of {@link NativeLayoutTest#checks()}. */
final class CmLayoutChecks {
    private CmLayoutChecks() {
    }

    static List<NativeLayoutTest.Check> checks() {
        String id = "struct rdma_cm_id";
        String ev = "struct rdma_cm_event";
        String cp = "struct rdma_conn_param";
        return List.of(
                size(id, rdma_cm_id.sizeof()),
                field(id, "verbs", rdma_cm_id.verbs$offset(), rdma_cm_id.verbs$layout()),
                field(id, "qp", rdma_cm_id.qp$offset(), rdma_cm_id.qp$layout()),
                size(ev, rdma_cm_event.sizeof()),
                field(ev, "id", rdma_cm_event.id$offset(), rdma_cm_event.id$layout()),
                field(ev, "listen_id", rdma_cm_event.listen_id$offset(), rdma_cm_event.listen_id$layout()),
                field(ev, "event", rdma_cm_event.event$offset(), rdma_cm_event.event$layout()),
                field(ev, "status", rdma_cm_event.status$offset(), rdma_cm_event.status$layout()),
                size(cp, rdma_conn_param.sizeof()),
                field(cp, "responder_resources", rdma_conn_param.responder_resources$offset(), rdma_conn_param.responder_resources$layout()),
                field(cp, "initiator_depth", rdma_conn_param.initiator_depth$offset(), rdma_conn_param.initiator_depth$layout()),
                field(cp, "retry_count", rdma_conn_param.retry_count$offset(), rdma_conn_param.retry_count$layout()),
                field(cp, "rnr_retry_count", rdma_conn_param.rnr_retry_count$offset(), rdma_conn_param.rnr_retry_count$layout()),
                size("struct rdma_event_channel", rdma_event_channel.sizeof()),
                field("struct rdma_event_channel", "fd", rdma_event_channel.fd$offset(), rdma_event_channel.fd$layout()),
                size("struct sockaddr_storage", sockaddr_storage.sizeof()),
                field("struct sockaddr_in", "sin_family", sockaddr_in.sin_family$offset(), sockaddr_in.sin_family$layout()),
                field("struct sockaddr_in", "sin_port", sockaddr_in.sin_port$offset(), sockaddr_in.sin_port$layout()),
                field("struct sockaddr_in", "sin_addr", sockaddr_in.sin_addr$offset(), sockaddr_in.sin_addr$layout()),
                field("struct sockaddr_in6", "sin6_family", sockaddr_in6.sin6_family$offset(), sockaddr_in6.sin6_family$layout()),
                field("struct sockaddr_in6", "sin6_port", sockaddr_in6.sin6_port$offset(), sockaddr_in6.sin6_port$layout()),
                field("struct sockaddr_in6", "sin6_addr", sockaddr_in6.sin6_addr$offset(), sockaddr_in6.sin6_addr$layout()));
    }
}
