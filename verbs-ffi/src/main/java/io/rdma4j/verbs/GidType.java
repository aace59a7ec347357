package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;

/** The GID types of {@code enum ibv_gid_type}. */
public enum GidType {
    IB(Verbs.IBV_GID_TYPE_IB()),
    ROCE_V1(Verbs.IBV_GID_TYPE_ROCE_V1()),
    ROCE_V2(Verbs.IBV_GID_TYPE_ROCE_V2());

    private final int code;

    GidType(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    public static GidType ofCode(int code) {
        for (GidType t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown ibv_gid_type " + code);
    }

    /** Parses the text of sysfs {@code gid_attrs/types/<i>} ("IB/RoCE v1", "RoCE v2"). */
    public static GidType ofSysfs(String text) {
        String t = text.trim();
        if (t.equalsIgnoreCase("RoCE v2")) {
            return ROCE_V2;
        }
        if (t.equalsIgnoreCase("IB/RoCE v1")) {
            return ROCE_V1;
        }
        throw new IllegalArgumentException("unknown sysfs GID type '" + t + "'");
    }
}
