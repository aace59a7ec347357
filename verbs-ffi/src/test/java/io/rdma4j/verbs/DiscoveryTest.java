package io.rdma4j.verbs;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

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

    /**
     * A second copy of rdma4j's verbs classes in this JVM (another class loader: an application
     * server's, a notebook's) finds the library installed but cannot register it (the JDK lets one
     * loader register a library): it says so, instead of telling the user to install what is there.
     * libc stands in for libibverbs, registered by this test's loader first.
     */
    @Test
    void aLibraryAnotherClassLoaderRegisteredIsNotReportedAsMissing() throws Exception {
        new NativeLibrary("libc", "libc.so.6", "nothing to install", "malloc").load();
        java.net.URL classes = NativeLibrary.class.getProtectionDomain().getCodeSource().getLocation();
        try (java.net.URLClassLoader other = new java.net.URLClassLoader(new java.net.URL[] {classes}, null)) {
            Class<?> copy = Class.forName(NativeLibrary.class.getName(), true, other);
            java.lang.reflect.Constructor<?> make = copy.getDeclaredConstructor(String.class, String.class, String.class,
                    String[].class);
            make.setAccessible(true);
            Object libc = make.newInstance("libc", "libc.so.6", "nothing to install", new String[] {"malloc"});
            java.lang.reflect.InvocationTargetException thrown = assertThrows(
                    java.lang.reflect.InvocationTargetException.class, () -> copy.getMethod("load").invoke(libc));
            String message = thrown.getCause().getMessage();
            assertEquals("LibraryMissingException", thrown.getCause().getClass().getSimpleName(), message);
            assertTrue(message.contains("is installed") && message.contains("could not be registered with the class loader")
                    && message.contains("already loaded in another classloader"), message);
            assertFalse(message.contains("Install it"), message);
        }
    }

    @Test
    void aLibraryWithoutASymbolRdma4jCallsIsReportedAsTooOldWhenItLoads() {
        // libc loads, but has none of libibverbs' functions: a stand-in for an rdma-core older than 34
        NativeLibrary old = new NativeLibrary("libibverbs", "libc.so.6", NativeLibraryHints.IBVERBS,
                "ibv_get_device_list", "ibv_reg_dmabuf_mr");
        LibraryMissingException e = assertThrows(LibraryMissingException.class, old::load);
        assertTrue(e.getMessage().contains("has no symbol ibv_get_device_list")
                && e.getMessage().contains("rdma-core >= 34"), e.getMessage());
        assertFalse(old.isAvailable());
        DeviceDiscovery d = RdmaDevices.discover(old);
        assertEquals(DiscoveryStatus.LIBRARY_MISSING, d.status());
        assertTrue(d.explanation().contains("ibv_get_device_list"), d.explanation());
    }

    /**
     * rdma_cm's entry points load the libraries before anything initialises the handles that
     * need them, so a missing librdmacm is the install report every time, not an
     * ExceptionInInitializerError and then NoClassDefFoundError. In a JVM of its own: the
     * library's name is fixed when NativeLibrary initialises.
     */
    @Test
    void rdmaCmReportsAMissingLibrdmacmOnEveryCall() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED",
                "-Drdma4j.librdmacm=librdma4j-test-absent-cm.so.1", "-cp", System.getProperty("java.class.path"),
                CmWithoutLibrary.class.getName()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), out);
        assertTrue(out.contains("call 1: LibraryMissingException") && out.contains("call 2: LibraryMissingException"),
                out);
        assertTrue(out.contains(USERLAND ? "librdma4j-test-absent-cm.so.1" : "libibverbs.so.1"), out);
    }

    /** The child JVM of {@link #rdmaCmReportsAMissingLibrdmacmOnEveryCall}. */
    static final class CmWithoutLibrary {
        public static void main(String[] args) {
            for (int call = 1; call <= 2; call++) {
                try {
                    CmId.create().close();
                    System.out.println("call " + call + ": created");
                } catch (Throwable t) {
                    System.out.println("call " + call + ": " + t.getClass().getSimpleName() + ": " + t.getMessage());
                }
            }
        }
    }

    @Test
    void aFailedRegistrationBlamesTheLockedMemoryLimitOnlyForEnomem() {
        String enomem = MemoryRegion.registrationFailed("MemoryRegion of 8 bytes", 12).getMessage();
        assertTrue(enomem.contains("RLIMIT_MEMLOCK") && enomem.contains("ENOMEM"), enomem);
        String einval = MemoryRegion.registrationFailed("MemoryRegion of 8 bytes", 22).getMessage();
        assertFalse(einval.contains("RLIMIT_MEMLOCK"), einval);
        assertTrue(einval.endsWith("failed: EINVAL (Invalid argument)"), einval);
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
