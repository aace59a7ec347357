package io.rdma4j.cuda;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The whole CUDA layer when libcuda.so.1 cannot be found (own JVM: the outcome is cached per process). */
@EnabledIfSystemProperty(named = "rdma4j.test.jvm", matches = "libcuda-missing",
        disabledReason = "needs a JVM of its own: runs in the surefire execution jvm-libcuda-missing")
class CudaLibraryMissingTest {
    private static final Path MISSING = Path.of("/nonexistent-rdma4j-test/libcuda.so.1");

    @BeforeAll
    static void pointAtAMissingLibrary() {
        assertTrue(CudaLibrary.loadedPath().isEmpty(), "needs a JVM where no libcuda was loaded yet");
        System.setProperty(CudaLibrary.PROPERTY, MISSING.toString());
    }

    @Test
    void probeExplainsWhatIsMissingWithoutThrowing() {
        CudaProbe probe = Cuda.probe();
        assertEquals(CudaStatus.LIBRARY_MISSING, probe.status());
        assertTrue(probe.library().isEmpty());
        assertEquals(0, probe.deviceCount());
        assertTrue(probe.explanation().contains(MISSING.toString()), probe.explanation());
        assertTrue(probe.explanation().contains("nvidia-driver"), probe.explanation());
    }

    @Test
    void everyEntryPointThrowsTheSameClearError() {
        var init = assertThrows(CudaLibraryMissingException.class, Cuda::init);
        var count = assertThrows(CudaLibraryMissingException.class, Cuda::deviceCount);
        assertThrows(CudaLibraryMissingException.class, Cuda::driverVersion);
        assertThrows(CudaLibraryMissingException.class, () -> Cuda.device(0));
        assertThrows(CudaLibraryMissingException.class, () -> CudaPointer.memoryType(0x1000));
        assertEquals(init.getMessage(), count.getMessage());
        assertTrue(Cuda.loadedLibrary().isEmpty());
        assertTrue(init.getMessage().contains("libcuda.so.1"), init.getMessage());
    }

    @Test
    void aLibraryThatIsNotTheDriverIsRefusedNamingWhatItLacks(@TempDir Path dir) throws IOException {
        // a copy of a shared library every JDK has (the JVM loaded the original itself), which
        // exports none of the driver's functions
        Path notTheDriver = Files.copy(Path.of(System.getProperty("java.home"), "lib", "libjimage.so"),
                dir.resolve("libcuda.so.1"));
        System.setProperty(CudaLibrary.PROPERTY, notTheDriver.toString());
        try {
            for (int i = 0; i < 2; i++) {
                var e = assertThrows(CudaLibraryMissingException.class, () -> Cuda.device(0));
                assertTrue(e.getMessage().contains(notTheDriver + " lacks cuInit, ")
                        && e.getMessage().contains("CUDA 11.0"), e.getMessage());
            }
            CudaProbe probe = Cuda.probe();
            assertEquals(CudaStatus.LIBRARY_MISSING, probe.status());
            assertTrue(probe.explanation().contains("lacks cuInit"), probe.explanation());
            assertTrue(Cuda.loadedLibrary().isEmpty());
        } finally {
            System.setProperty(CudaLibrary.PROPERTY, MISSING.toString());
        }
    }
}
