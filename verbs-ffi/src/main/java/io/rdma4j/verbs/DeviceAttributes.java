package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.ibv_device_attr;

import java.lang.foreign.MemorySegment;

/** The capabilities ibv_query_device reports that matter for sizing queues and regions. */
public record DeviceAttributes(String firmwareVersion, long nodeGuid, long maxMrSize, long pageSizeCap,
                               int vendorId, int vendorPartId, int hardwareVersion, int maxQp, int maxQpWr,
                               long deviceCapFlags, int maxSge, int maxSgeRd, int maxCq, int maxCqe, int maxMr,
                               int maxPd, int maxQpRdAtom, int maxQpInitRdAtom, int maxResRdAtom, int atomicCap,
                               int maxAh, int maxSrq, int maxPkeys, int physicalPortCount) {

    static DeviceAttributes from(MemorySegment a) {
        return new DeviceAttributes(ibv_device_attr.fw_ver(a).getString(0),
                Long.reverseBytes(ibv_device_attr.node_guid(a)),
                ibv_device_attr.max_mr_size(a), ibv_device_attr.page_size_cap(a),
                ibv_device_attr.vendor_id(a), ibv_device_attr.vendor_part_id(a), ibv_device_attr.hw_ver(a),
                ibv_device_attr.max_qp(a), ibv_device_attr.max_qp_wr(a),
                Integer.toUnsignedLong(ibv_device_attr.device_cap_flags(a)),
                ibv_device_attr.max_sge(a), ibv_device_attr.max_sge_rd(a), ibv_device_attr.max_cq(a),
                ibv_device_attr.max_cqe(a), ibv_device_attr.max_mr(a), ibv_device_attr.max_pd(a),
                ibv_device_attr.max_qp_rd_atom(a), ibv_device_attr.max_qp_init_rd_atom(a),
                ibv_device_attr.max_res_rd_atom(a), ibv_device_attr.atomic_cap(a), ibv_device_attr.max_ah(a),
                ibv_device_attr.max_srq(a), Short.toUnsignedInt(ibv_device_attr.max_pkeys(a)),
                Byte.toUnsignedInt(ibv_device_attr.phys_port_cnt(a)));
    }

    /** "none", "HCA" (atomic within the adapter) or "global", as {@code ibv_devinfo} says. */
    public String atomicCapName() {
        if (atomicCap == Verbs.IBV_ATOMIC_HCA()) {
            return "HCA";
        }
        if (atomicCap == Verbs.IBV_ATOMIC_GLOB()) {
            return "global";
        }
        return "none";
    }

    public String nodeGuidHex() {
        return String.format("%016x", nodeGuid);
    }
}
