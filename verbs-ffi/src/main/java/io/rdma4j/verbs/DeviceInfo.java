package io.rdma4j.verbs;

/** A device as ibv_get_device_list names it, before it is opened. */
public record DeviceInfo(String name, long guid) {
    /** The GUID as ibv_devices prints it. */
    public String guidHex() {
        return String.format("%016x", guid);
    }
}
