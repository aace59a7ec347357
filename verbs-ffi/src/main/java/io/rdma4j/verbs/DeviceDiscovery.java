package io.rdma4j.verbs;

import java.util.List;

/**
 * The outcome of looking for RDMA devices. {@code explanation} is a paragraph a user can act on
 * (what is missing and the command that fixes it); it is empty for {@link DiscoveryStatus#DEVICES_FOUND}.
 */
public record DeviceDiscovery(DiscoveryStatus status, List<DeviceInfo> devices, String explanation) {
    public DeviceDiscovery {
        devices = List.copyOf(devices);
    }

    public boolean hasDevices() {
        return status == DiscoveryStatus.DEVICES_FOUND;
    }
}
