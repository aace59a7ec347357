package io.rdma4j.verbs;

import io.rdma4j.nativesupport.internal.Checks;
import io.rdma4j.verbs.ffi.rdma_conn_param;

import java.lang.foreign.MemorySegment;

/**
 * What rdma_connect / rdma_accept negotiate ({@code struct rdma_conn_param}): outstanding RDMA
 * reads/atomics each side accepts and issues, and the retry counts of the connection.
 */
public record CmConnectionParams(int responderResources, int initiatorDepth, int retryCount, int rnrRetryCount) {
    public CmConnectionParams {
        Checks.inRange("responderResources", responderResources, 0, 255);
        Checks.inRange("initiatorDepth", initiatorDepth, 0, 255);
        Checks.inRange("retryCount", retryCount, 0, 7);
        Checks.inRange("rnrRetryCount", rnrRetryCount, 0, 7);
    }

    public static CmConnectionParams defaults() {
        return new CmConnectionParams(1, 1, 7, 7);
    }

    void fill(MemorySegment p) {
        p.fill((byte) 0);
        rdma_conn_param.responder_resources(p, (byte) responderResources);
        rdma_conn_param.initiator_depth(p, (byte) initiatorDepth);
        rdma_conn_param.retry_count(p, (byte) retryCount);
        rdma_conn_param.rnr_retry_count(p, (byte) rnrRetryCount);
    }
}
