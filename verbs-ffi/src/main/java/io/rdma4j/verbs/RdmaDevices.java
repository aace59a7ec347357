package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Entry point: finds RDMA devices and opens them. Discovery never throws; it tells apart the
 * reasons a machine has no usable device so that the user learns which step is missing.
 */
public final class RdmaDevices {
    static final String SOFTROCE_HINT = "To try rdma4j without an RDMA NIC, create a Soft-RoCE device on an Ethernet "
            + "interface (sudo modprobe rdma_rxe && sudo rdma link add rxe0 type rxe netdev <interface>), or run "
            + "the command inside a VM that has one: scripts/softroce-vm -- <command>.";

    private RdmaDevices() {
    }

    public static DeviceDiscovery discover() {
        return discover(NativeLibrary.IBVERBS);
    }

    static DeviceDiscovery discover(NativeLibrary ibverbs) {
        try {
            ibverbs.load();
        } catch (LibraryMissingException e) {
            return new DeviceDiscovery(DiscoveryStatus.LIBRARY_MISSING, List.of(), e.getMessage()
                    + " Without it no RDMA device can be used from user space.");
        }
        try (DeviceList list = DeviceList.get()) {
            if (list.size() == 0) {
                return new DeviceDiscovery(DiscoveryStatus.NO_DEVICES, List.of(), noDevicesExplanation());
            }
            return new DeviceDiscovery(DiscoveryStatus.DEVICES_FOUND, list.infos(), "");
        } catch (VerbsException e) {
            if (e.errno() == Verbs.ENOSYS()) {
                return new DeviceDiscovery(DiscoveryStatus.KERNEL_NO_RDMA, List.of(),
                        "libibverbs is installed, but the running kernel exposes no RDMA support: "
                                + "ibv_get_device_list failed with ENOSYS because /sys/class/infiniband_verbs "
                                + "does not exist (the ib_uverbs module is not loaded, or the kernel has no "
                                + "InfiniBand support). With an RDMA NIC, load its driver and ib_uverbs "
                                + "(sudo modprobe ib_uverbs; e.g. mlx5_ib for ConnectX); in a container, pass "
                                + "/dev/infiniband and /sys/class/infiniband_verbs through. " + SOFTROCE_HINT);
            }
            return new DeviceDiscovery(DiscoveryStatus.FAILED, List.of(), e.getMessage());
        }
    }

    private static String noDevicesExplanation() {
        List<String> kernelDevices = kernelDevices();
        if (!kernelDevices.isEmpty()) {
            return "The kernel has RDMA devices (" + String.join(", ", kernelDevices) + " in /sys/class/infiniband), "
                    + "but libibverbs has no user-space provider for them: install ibverbs-providers "
                    + "(Debian/Ubuntu) or rdma-core (RHEL/Fedora), and check /dev/infiniband/uverbs* is readable.";
        }
        return "The kernel supports RDMA (ib_uverbs is loaded) but there is no RDMA device: load the driver of "
                + "your NIC (see 'rdma link show'). " + SOFTROCE_HINT;
    }

    private static List<String> kernelDevices() {
        Path dir = Path.of("/sys/class/infiniband");
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().collect(Collectors.toList());
        } catch (IOException e) {
            return List.of();
        }
    }

    /**
     * Opens the device called {@code name}, or the first device when {@code name} is null.
     *
     * @throws VerbsException with the discovery explanation when there is no such device
     */
    public static DeviceContext open(String name) {
        DeviceDiscovery d = discover();
        if (!d.hasDevices()) {
            throw new VerbsException("no RDMA device to open (" + d.status() + "): " + d.explanation());
        }
        try (DeviceList list = DeviceList.get()) {
            for (int i = 0; i < list.size(); i++) {
                if (name == null || name.equals(list.name(i))) {
                    return DeviceContext.open(list.device(i), list.name(i));
                }
            }
        }
        throw new VerbsException("no RDMA device named '" + name + "'; found: "
                + d.devices().stream().map(DeviceInfo::name).collect(Collectors.joining(", ")));
    }
}
