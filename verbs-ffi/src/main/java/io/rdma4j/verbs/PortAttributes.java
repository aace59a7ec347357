package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.ibv_port_attr;

import java.lang.foreign.MemorySegment;

/** A port's state as the extended query_port reports it. */
public record PortAttributes(int port, int state, Mtu maxMtu, Mtu activeMtu, int gidTableLength, int portCapFlags,
                             long maxMessageSize, int lid, int smLid, int activeWidth, int activeSpeed,
                             int physicalState, int linkLayer) {

    static PortAttributes from(int port, MemorySegment a) {
        return new PortAttributes(port, ibv_port_attr.state(a), Mtu.ofCode(ibv_port_attr.max_mtu(a)),
                Mtu.ofCode(ibv_port_attr.active_mtu(a)), ibv_port_attr.gid_tbl_len(a), ibv_port_attr.port_cap_flags(a),
                Integer.toUnsignedLong(ibv_port_attr.max_msg_sz(a)), Short.toUnsignedInt(ibv_port_attr.lid(a)),
                Short.toUnsignedInt(ibv_port_attr.sm_lid(a)), Byte.toUnsignedInt(ibv_port_attr.active_width(a)),
                Byte.toUnsignedInt(ibv_port_attr.active_speed(a)), Byte.toUnsignedInt(ibv_port_attr.phys_state(a)),
                Byte.toUnsignedInt(ibv_port_attr.link_layer(a)));
    }

    public boolean isActive() {
        return state == Verbs.IBV_PORT_ACTIVE();
    }

    /** RoCE/iWARP ports report Ethernet; they are addressed by GID, never by LID. */
    public boolean isEthernet() {
        return linkLayer == Verbs.IBV_LINK_LAYER_ETHERNET();
    }

    public String stateName() {
        if (state == Verbs.IBV_PORT_DOWN()) {
            return "DOWN";
        } else if (state == Verbs.IBV_PORT_INIT()) {
            return "INIT";
        } else if (state == Verbs.IBV_PORT_ARMED()) {
            return "ARMED";
        } else if (state == Verbs.IBV_PORT_ACTIVE()) {
            return "ACTIVE";
        } else if (state == Verbs.IBV_PORT_ACTIVE_DEFER()) {
            return "ACTIVE_DEFER";
        }
        return "NOP(" + state + ")";
    }

    public String linkLayerName() {
        if (linkLayer == Verbs.IBV_LINK_LAYER_ETHERNET()) {
            return "Ethernet";
        }
        return linkLayer == Verbs.IBV_LINK_LAYER_INFINIBAND() ? "InfiniBand" : "unspecified";
    }

    /** Lanes times per-lane rate, decoded as ibv_devinfo does ("4x 25 Gb/s = 100 Gb/s"). */
    public String speedDescription() {
        int lanes = switch (activeWidth) {
            case 1 -> 1;
            case 2 -> 4;
            case 4 -> 8;
            case 8 -> 12;
            case 16 -> 2;
            default -> 0;
        };
        double laneGbps = switch (activeSpeed) {
            case 1 -> 2.5;
            case 2 -> 5.0;
            case 4, 8 -> 10.0;
            case 16 -> 14.0;
            case 32 -> 25.0;
            case 64 -> 50.0;
            case 128 -> 100.0;
            default -> 0;
        };
        if (lanes == 0 || laneGbps == 0) {
            return "unknown (width " + activeWidth + ", speed " + activeSpeed + ")";
        }
        return String.format("%dx %s Gb/s = %s Gb/s", lanes, trim(laneGbps), trim(lanes * laneGbps));
    }

    private static String trim(double d) {
        return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
    }
}
