package io.rdma4j.verbs.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/**
 * The convention for tests that need a real verbs device.
 *
 * <p>Tag such a test {@code @Tag(SoftRoce.TAG)} and call {@link #requireDeviceOrSkip()} first.
 * The normal build ({@code mvn verify}) excludes the tag, because the build machine usually has
 * no RDMA device; {@code scripts/softroce-test} runs the tagged tests inside a qemu guest with
 * a kernel Soft-RoCE device. There a missing device is a test failure, never a skip, so a broken
 * harness cannot pass silently. Anywhere else (for example a host with a real NIC, running
 * {@code mvn test -Drdma4j.test.excludedGroups= -Dgroups=softroce}) a missing device skips the
 * test with the reason.
 *
 * <p>Other modules use this class through verbs-ffi's test-jar
 * ({@code <type>test-jar</type>}, test scope).
 */
public final class SoftRoce {

    /** The JUnit tag of tests that need a verbs device. */
    public static final String TAG = "softroce";

    private static final Path SYSFS_DEVICES = Path.of("/sys/class/infiniband");

    private SoftRoce() {
    }

    /** Whether this JVM runs inside the scripts/softroce-vm guest. */
    public static boolean inGuest() {
        return "1".equals(System.getenv("SOFTROCE_VM"));
    }

    /**
     * The names of the verbs devices the kernel has (for example {@code [rxe0, rxe1]}), sorted.
     * Skips the calling test when there is none, except inside the guest, where it fails it.
     */
    public static List<String> requireDeviceOrSkip() {
        return requireDeviceOrSkip(inGuest(), SYSFS_DEVICES);
    }

    static List<String> requireDeviceOrSkip(boolean inGuest, Path sysfsDevices) {
        List<String> devices = listDevices(sysfsDevices);
        if (devices.isEmpty()) {
            if (inGuest) {
                Assertions.fail("SOFTROCE_VM=1 but " + sysfsDevices
                        + " lists no verbs device: the Soft-RoCE guest did not bring up rxe");
            }
            Assumptions.abort("no RDMA verbs device on this machine (" + sysfsDevices
                    + " lists none); run scripts/softroce-test to run this test against Soft-RoCE");
        }
        return devices;
    }

    /**
     * The options of this JVM that a child JVM started by a test must repeat, as
     * scripts/softroce-test sets them for the guest: where the JVM writes its crash report
     * ({@code -XX:ErrorFile}), so that the script finds the hs_err file of a child that died under
     * the emulator, and the compilation tier ({@code -XX:TieredStopAtLevel}), which keeps the JIT
     * from patching running code under qemu. Empty when this JVM was started without them.
     */
    public static List<String> childJvmOptions() {
        return java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .filter(a -> a.startsWith("-XX:ErrorFile=") || a.startsWith("-XX:TieredStopAtLevel=")).toList();
    }

    /** The rxe devices scripts/softroce-vm created (for example {@code [rxe0, rxe1]}); empty outside it. */
    public static List<String> guestDevices() {
        String devices = System.getenv("RXE_DEVICES");
        return devices == null ? List.of() : words(devices);
    }

    /**
     * The IPv4 address of a Soft-RoCE device in the guest (its RoCE v2 GID is
     * {@code ::ffff:<address>}), as scripts/softroce-vm exported it.
     *
     * @throws IllegalStateException outside the guest, or for a device the guest did not create
     */
    public static String ipv4Address(String device) {
        return ipv4Address(device, System.getenv("RXE_DEVICES"), System.getenv("RXE_IPS"));
    }

    static String ipv4Address(String device, String rxeDevices, String rxeIps) {
        if (rxeDevices == null || rxeIps == null) {
            throw new IllegalStateException("RXE_DEVICES/RXE_IPS are not set: not inside scripts/softroce-vm");
        }
        List<String> names = words(rxeDevices);
        List<String> ips = words(rxeIps);
        int i = names.indexOf(device);
        if (i < 0 || i >= ips.size()) {
            throw new IllegalStateException("no Soft-RoCE device '" + device + "' in RXE_DEVICES='"
                    + rxeDevices + "' / RXE_IPS='" + rxeIps + "'");
        }
        return ips.get(i);
    }

    private static List<String> words(String s) {
        return Arrays.stream(s.trim().split("\\s+")).filter(w -> !w.isEmpty()).toList();
    }

    private static List<String> listDevices(Path sysfsDevices) {
        try (Stream<Path> entries = Files.list(sysfsDevices)) {
            return entries.map(p -> p.getFileName().toString()).sorted().toList();
        } catch (NoSuchFileException e) {
            return List.of();   // no ib_core loaded at all
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + sysfsDevices, e);
        }
    }

    /** The kernel's count of this process's pinned memory (/proc/self/status VmPin), in kB. */
    public static long vmPinKiB() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmPin:")) {
                return Long.parseLong(line.replaceAll("\\D", ""));
            }
        }
        throw new IllegalStateException("no VmPin in /proc/self/status");
    }
}
