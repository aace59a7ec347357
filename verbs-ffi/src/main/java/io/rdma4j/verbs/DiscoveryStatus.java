package io.rdma4j.verbs;

/** Why {@link RdmaDevices#discover()} found the devices it found, or none. */
public enum DiscoveryStatus {
    /** libibverbs.so.1 cannot be loaded: the user-space RDMA stack is not installed. */
    LIBRARY_MISSING,
    /** ibv_get_device_list failed with ENOSYS: the kernel exposes no RDMA (no ib_uverbs). */
    KERNEL_NO_RDMA,
    /** The kernel supports RDMA but no device is usable (none present, or no provider for it). */
    NO_DEVICES,
    /** At least one device was listed. */
    DEVICES_FOUND,
    /** ibv_get_device_list failed for another reason (the explanation carries the errno). */
    FAILED
}
