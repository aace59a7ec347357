package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;

/** Path MTU ({@code enum ibv_mtu}). */
public enum Mtu {
    MTU_256(Verbs.IBV_MTU_256(), 256),
    MTU_512(Verbs.IBV_MTU_512(), 512),
    MTU_1024(Verbs.IBV_MTU_1024(), 1024),
    MTU_2048(Verbs.IBV_MTU_2048(), 2048),
    MTU_4096(Verbs.IBV_MTU_4096(), 4096);

    private final int code;
    private final int bytes;

    Mtu(int code, int bytes) {
        this.code = code;
        this.bytes = bytes;
    }

    public int code() {
        return code;
    }

    public int bytes() {
        return bytes;
    }

    /** The enum for an {@code ibv_mtu} value as a port reports it; 0 (not set) maps to null. */
    public static Mtu ofCode(int code) {
        for (Mtu m : values()) {
            if (m.code == code) {
                return m;
            }
        }
        return null;
    }
}
