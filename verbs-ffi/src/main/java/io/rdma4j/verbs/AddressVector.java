package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.ibv_ah_attr;
import io.rdma4j.verbs.ffi.ibv_gid;
import io.rdma4j.verbs.ffi.ibv_global_route;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * Fills a {@code struct ibv_ah_attr}: the path to a peer, used both by an RC QP's RTR transition
 * and by a UD address handle. A non-null GID adds a global route header (required on RoCE).
 */
final class AddressVector {
    private AddressVector() {
    }

    static void fill(MemorySegment ah, int port, int lid, Gid gid, int sgidIndex, int hopLimit, int trafficClass,
                     int serviceLevel) {
        ah.fill((byte) 0);
        ibv_ah_attr.dlid(ah, (short) lid);
        ibv_ah_attr.sl(ah, (byte) serviceLevel);
        ibv_ah_attr.port_num(ah, (byte) port);
        if (gid != null) {
            if (sgidIndex < 0) {
                throw new IllegalArgumentException("the peer is addressed by GID " + gid
                        + " but no source GID index was given (gidIndex is -1); RoCE needs one, see DeviceContext.preferredGid");
            }
            ibv_ah_attr.is_global(ah, (byte) 1);
            MemorySegment grh = ibv_ah_attr.grh(ah);
            MemorySegment.copy(gid.raw(), 0, ibv_gid.raw(ibv_global_route.dgid(grh)), JAVA_BYTE, 0, Gid.BYTES);
            ibv_global_route.sgid_index(grh, (byte) sgidIndex);
            ibv_global_route.hop_limit(grh, (byte) hopLimit);
            ibv_global_route.traffic_class(grh, (byte) trafficClass);
        }
    }
}
