package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.RdmaCm;

/** A copy of an rdma_cm event, taken before the event is acknowledged. */
@SuppressWarnings("restricted")
record CmEvent(int type, int status, long idAddress, long listenIdAddress) {
    String typeName() {
        return name(type);
    }

    static String name(int type) {
        return NativeLibrary.RDMACM.isAvailable() ? RdmaCm.rdma_event_str(type).reinterpret(64).getString(0)
                : "event " + type;
    }
}
