package io.rdma4j.verbs;

import io.rdma4j.nativesupport.internal.Checks;

/**
 * Queue sizes of a QP ({@code struct ibv_qp_cap}). On creation the provider may round them up;
 * {@link QueuePair#capabilities()} reports what it granted.
 */
public record QpCapabilities(int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData) {
    public QpCapabilities {
        Checks.positive("maxSendWr", maxSendWr);
        Checks.positive("maxRecvWr", maxRecvWr);
        Checks.positive("maxSendSge", maxSendSge);
        Checks.positive("maxRecvSge", maxRecvSge);
        Checks.nonNegative("maxInlineData", maxInlineData);
    }
}
