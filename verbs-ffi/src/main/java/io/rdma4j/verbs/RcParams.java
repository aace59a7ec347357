package io.rdma4j.verbs;

import io.rdma4j.nativesupport.internal.Checks;

import java.util.Objects;

/**
 * The knobs of an RC connection that ibv_modify_qp takes on the way RESET -> INIT -> RTR -> RTS.
 * Defaults are those of perftest / ibv_rc_pingpong. Ranges are checked here, before any native
 * call, because the kernel's EINVAL would not say which field was wrong.
 *
 * @param port            HCA port number (1-based)
 * @param pkeyIndex       partition key index
 * @param accessFlags     remote access the QP grants ({@link Access} bits)
 * @param mtu             path MTU; must not exceed the port's active MTU
 * @param gidIndex        source GID index for the global route header; -1 = no GRH (IB, LID routed)
 * @param hopLimit        GRH hop limit
 * @param trafficClass    GRH traffic class (DSCP/ECN bits on RoCE)
 * @param serviceLevel    SL (maps to a priority on RoCE)
 * @param timeout         local ACK timeout exponent: 4.096 us * 2^timeout, 0 = infinite
 * @param retryCount      transport retries before a RETRY_EXC_ERR completion
 * @param rnrRetry        receiver-not-ready retries, 7 = infinite
 * @param minRnrTimer     RNR NAK timer code the responder advertises
 * @param maxRdAtomic     outstanding RDMA reads/atomics this QP issues
 * @param maxDestRdAtomic outstanding RDMA reads/atomics this QP accepts
 */
public record RcParams(int port, int pkeyIndex, int accessFlags, Mtu mtu, int gidIndex, int hopLimit,
                       int trafficClass, int serviceLevel, int timeout, int retryCount, int rnrRetry,
                       int minRnrTimer, int maxRdAtomic, int maxDestRdAtomic) {

    public RcParams {
        Checks.inRange("port", port, 1, 255);
        Checks.inRange("pkeyIndex", pkeyIndex, 0, 0xffff);
        Objects.requireNonNull(mtu, "mtu");
        Checks.inRange("gidIndex", gidIndex, -1, 255);
        Checks.inRange("hopLimit", hopLimit, 0, 255);
        Checks.inRange("trafficClass", trafficClass, 0, 255);
        Checks.inRange("serviceLevel", serviceLevel, 0, 15);
        Checks.inRange("timeout", timeout, 0, 31);
        Checks.inRange("retryCount", retryCount, 0, 7);
        Checks.inRange("rnrRetry", rnrRetry, 0, 7);
        Checks.inRange("minRnrTimer", minRnrTimer, 0, 31);
        Checks.inRange("maxRdAtomic", maxRdAtomic, 0, 255);
        Checks.inRange("maxDestRdAtomic", maxDestRdAtomic, 0, 255);
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return new Builder().port(port).pkeyIndex(pkeyIndex).accessFlags(accessFlags).mtu(mtu)
                .gidIndex(gidIndex).hopLimit(hopLimit).trafficClass(trafficClass).serviceLevel(serviceLevel)
                .timeout(timeout).retryCount(retryCount).rnrRetry(rnrRetry).minRnrTimer(minRnrTimer)
                .maxRdAtomic(maxRdAtomic).maxDestRdAtomic(maxDestRdAtomic);
    }

    public boolean usesGlobalRoute() {
        return gidIndex >= 0;
    }

    public static final class Builder {
        private int port = 1;
        private int pkeyIndex = 0;
        private int accessFlags = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
        private Mtu mtu = Mtu.MTU_1024;
        private int gidIndex = -1;
        private int hopLimit = 64;
        private int trafficClass = 0;
        private int serviceLevel = 0;
        private int timeout = 14;
        private int retryCount = 7;
        private int rnrRetry = 7;
        private int minRnrTimer = 12;
        private int maxRdAtomic = 1;
        private int maxDestRdAtomic = 1;

        private Builder() {
        }

        public Builder port(int v) { port = v; return this; }
        public Builder pkeyIndex(int v) { pkeyIndex = v; return this; }
        public Builder accessFlags(int v) { accessFlags = v; return this; }
        public Builder mtu(Mtu v) { mtu = v; return this; }
        public Builder gidIndex(int v) { gidIndex = v; return this; }
        public Builder hopLimit(int v) { hopLimit = v; return this; }
        public Builder trafficClass(int v) { trafficClass = v; return this; }
        public Builder serviceLevel(int v) { serviceLevel = v; return this; }
        public Builder timeout(int v) { timeout = v; return this; }
        public Builder retryCount(int v) { retryCount = v; return this; }
        public Builder rnrRetry(int v) { rnrRetry = v; return this; }
        public Builder minRnrTimer(int v) { minRnrTimer = v; return this; }
        public Builder maxRdAtomic(int v) { maxRdAtomic = v; return this; }
        public Builder maxDestRdAtomic(int v) { maxDestRdAtomic = v; return this; }

        public RcParams build() {
            return new RcParams(port, pkeyIndex, accessFlags, mtu, gidIndex, hopLimit, trafficClass, serviceLevel,
                    timeout, retryCount, rnrRetry, minRnrTimer, maxRdAtomic, maxDestRdAtomic);
        }
    }
}
