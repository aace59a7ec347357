package io.rdma4j.verbs;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/** Device discovery's four outcomes on a host without RDMA. */
class DiscoveryTest {
    private static final boolean KERNEL_HAS_VERBS = Files.isDirectory(Path.of("/sys/class/infiniband_verbs"));
    /** Whether the RDMA userland is installed; on a fresh machine it is not, and that is reported. */
    private static final boolean USERLAND = NativeLibrary.IBVERBS.isAvailable();

    /** The report of a machine without libibverbs: what is missing and the packages to install. */
    private static void assertLibraryMissingReport(String text) {
        assertTrue(text.contains("libibverbs.so.1"), text);
        assertTrue(text.contains("apt-get install libibverbs1 ibverbs-providers"), text);
    }

    @Test
    void kernelWithoutRdmaIsReportedAsSuchWithWhatToDo() {
        DeviceDiscovery d = RdmaDevices.discover();
        if (!USERLAND) {
            assertEquals(DiscoveryStatus.LIBRARY_MISSING, d.status(), d.explanation());
            assertTrue(d.devices().isEmpty());
            assertLibraryMissingReport(d.explanation());
            return;
        }
        if (KERNEL_HAS_VERBS) {
            // On a kernel with ib_uverbs (e.g. the Soft-RoCE guest) ENOSYS must not be claimed.
            assertTrue(d.status() == DiscoveryStatus.NO_DEVICES || d.status() == DiscoveryStatus.DEVICES_FOUND,
                    d.toString());
            return;
        }
        assertEquals(DiscoveryStatus.KERNEL_NO_RDMA, d.status(), d.explanation());
        assertTrue(d.devices().isEmpty());
        assertTrue(d.explanation().contains("ENOSYS"), d.explanation());
        assertTrue(d.explanation().contains("ib_uverbs"), d.explanation());
        assertTrue(d.explanation().contains("rdma_rxe"), d.explanation());
        assertTrue(d.explanation().contains("scripts/softroce-vm"), d.explanation());
    }

    @Test
    void openingWithoutDevicesFailsWithTheDiscoveryExplanation() {
        if (KERNEL_HAS_VERBS) {
            return; // covered by the Soft-RoCE integration tests
        }
        VerbsException e = assertThrows(VerbsException.class, () -> RdmaDevices.open(null));
        if (!USERLAND) {
            assertTrue(e.getMessage().contains("LIBRARY_MISSING"), e.getMessage());
            assertLibraryMissingReport(e.getMessage());
            return;
        }
        assertTrue(e.getMessage().contains("KERNEL_NO_RDMA"), e.getMessage());
        assertTrue(e.getMessage().contains("ENOSYS"), e.getMessage());
    }

    @Test
    void missingLibraryIsReportedWithThePackagesToInstall() {
        NativeLibrary absent = new NativeLibrary("libibverbs", "librdma4j-test-absent.so.1",
                "Debian/Ubuntu: sudo apt-get install libibverbs1 ibverbs-providers");
        DeviceDiscovery d = RdmaDevices.discover(absent);
        assertEquals(DiscoveryStatus.LIBRARY_MISSING, d.status());
        assertTrue(d.explanation().contains("librdma4j-test-absent.so.1"), d.explanation());
        assertTrue(d.explanation().contains("apt-get install libibverbs1 ibverbs-providers"), d.explanation());
        assertFalse(absent.isAvailable());
        // the failure is remembered and rethrown with the same message
        LibraryMissingException first = assertThrows(LibraryMissingException.class, absent::load);
        LibraryMissingException second = assertThrows(LibraryMissingException.class, absent::load);
        assertSame(first, second);
    }

    @Test
    void installHintsNameTheDistributionPackagesOfBothLibraries() throws Exception {
        NativeLibrary cm = new NativeLibrary("librdmacm", "librdma4j-test-absent-cm.so.1",
                NativeLibraryHints.RDMACM);
        LibraryMissingException e = assertThrows(LibraryMissingException.class, cm::load);
        assertTrue(e.getMessage().contains("librdmacm1"), e.getMessage());
        assertTrue(NativeLibraryHints.IBVERBS.contains("libibverbs1") && NativeLibraryHints.IBVERBS.contains("rdma-core"));
    }

    @Test
    void errnoIsNamedAndDescribed() {
        assertEquals("ENOSYS", Errno.name(38));
        assertEquals("ENOSYS (Function not implemented)", Errno.describe(38));
        assertEquals("errno 4242", Errno.name(4242));
        VerbsException e = new VerbsException("ibv_alloc_pd(rxe0)", 12);
        assertEquals(12, e.errno());
        assertEquals("ENOMEM", e.errnoName());
        assertEquals("ibv_alloc_pd(rxe0) failed: ENOMEM (Cannot allocate memory)", e.getMessage());
    }
}
