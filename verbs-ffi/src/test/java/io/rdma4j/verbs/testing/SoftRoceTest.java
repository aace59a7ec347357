package io.rdma4j.verbs.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.opentest4j.AssertionFailedError;
import org.opentest4j.TestAbortedException;

class SoftRoceTest {

    @TempDir
    Path sysfs;

    @Test
    void noDeviceOutsideTheGuestSkipsWithTheWayToRunIt() {
        TestAbortedException e = assertThrows(TestAbortedException.class,
                () -> SoftRoce.requireDeviceOrSkip(false, sysfs));
        assertTrue(e.getMessage().contains("scripts/softroce-test"), e.getMessage());
    }

    @Test
    void noDeviceInsideTheGuestFails() {
        assertThrows(AssertionFailedError.class, () -> SoftRoce.requireDeviceOrSkip(true, sysfs));
    }

    @Test
    void missingSysfsClassCountsAsNoDevice() {
        Path absent = sysfs.resolve("infiniband");
        assertThrows(TestAbortedException.class, () -> SoftRoce.requireDeviceOrSkip(false, absent));
        assertThrows(AssertionFailedError.class, () -> SoftRoce.requireDeviceOrSkip(true, absent));
    }

    @Test
    void devicesAreListedSortedWhereverTheTestRuns() throws IOException {
        Files.createDirectory(sysfs.resolve("rxe1"));
        Files.createDirectory(sysfs.resolve("rxe0"));
        assertEquals(List.of("rxe0", "rxe1"), SoftRoce.requireDeviceOrSkip(true, sysfs));
        assertEquals(List.of("rxe0", "rxe1"), SoftRoce.requireDeviceOrSkip(false, sysfs));
    }

    @Test
    void ipv4AddressPairsDevicesAndAddressesByPosition() {
        assertEquals("198.18.0.2", SoftRoce.ipv4Address("rxe1", "rxe0 rxe1", "198.18.0.1 198.18.0.2"));
        assertEquals("198.18.0.1", SoftRoce.ipv4Address("rxe0", " rxe0 ", "198.18.0.1"));
    }

    @Test
    void ipv4AddressNamesWhatIsMissing() {
        IllegalStateException unknown = assertThrows(IllegalStateException.class,
                () -> SoftRoce.ipv4Address("rxe7", "rxe0", "198.18.0.1"));
        assertTrue(unknown.getMessage().contains("rxe7"), unknown.getMessage());
        assertThrows(IllegalStateException.class, () -> SoftRoce.ipv4Address("rxe0", null, null));
    }
}
