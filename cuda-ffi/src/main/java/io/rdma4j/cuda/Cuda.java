package io.rdma4j.cuda;

import io.rdma4j.cuda.ffi.CudaDriver;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Entry point of the CUDA driver API: loads libcuda.so.1 and calls cuInit once, on first use.
 * {@link #probe()} never throws and says why there is no usable GPU; the other methods throw
 * {@link CudaLibraryMissingException} (looked for again on the next call) or {@link CudaException}
 * (the cuInit failure, remembered: the driver does not recover from a failed cuInit within a
 * process either).
 */
public final class Cuda {
    /** System property naming the libcuda.so.1 to load (absolute path); environment: RDMA4J_LIBCUDA. */
    public static final String LIBRARY_PROPERTY = "rdma4j.libcuda";

    private static final int NO_DEVICE = CudaDriver.CUDA_ERROR_NO_DEVICE();
    private static final int STUB_LIBRARY = CudaDriver.CUDA_ERROR_STUB_LIBRARY();

    private static boolean initialized;
    private static CudaException initFailure;

    private Cuda() {
    }

    /**
     * Loads the driver library and initializes it (cuInit(0)), once per process.
     *
     * @throws CudaLibraryMissingException when libcuda.so.1 is not installed
     * @throws CudaException               when cuInit fails, e.g. CUDA_ERROR_NO_DEVICE (100)
     */
    public static synchronized void init() {
        if (!initialized && initFailure == null) {
            Path library = CudaLibrary.load();
            try {
                CudaResult.check(CudaDriver.cuInit(0), "cuInit", "libcuda " + library);
                initialized = true;
            } catch (CudaException e) {
                initFailure = e;
            }
        }
        if (initFailure != null) {
            throw initFailure;
        }
    }

    /** Tells whether a GPU can be used and, if not, why; never throws. */
    public static CudaProbe probe() {
        Optional<Path> library = Optional.empty();
        int version = 0;
        try {
            library = Optional.of(CudaLibrary.load());
            version = driverVersion();
            init();
            int count = deviceCount();
            if (count == 0) {
                return new CudaProbe(CudaStatus.NO_DEVICE, "The CUDA driver " + library.get() + " (version "
                        + versionString(version) + ") initialized but lists no device."
                        + CudaLibrary.visibleDevicesNote(System.getenv()), library, version, 0, 0);
            }
            return new CudaProbe(CudaStatus.AVAILABLE, "CUDA driver " + library.get() + ", version "
                    + versionString(version) + ", " + count + " device(s)", library, version, count, 0);
        } catch (CudaLibraryMissingException e) {
            return new CudaProbe(CudaStatus.LIBRARY_MISSING, e.getMessage(), library, version, 0, 0);
        } catch (CudaException e) {
            return failedProbe(e, library, version);
        } catch (RuntimeException | LinkageError e) {
            // e.g. a library that lacks a function our header declares: report, never throw
            return new CudaProbe(CudaStatus.INIT_FAILED, "The CUDA driver " + library.map(Path::toString).orElse(
                    CudaLibrary.SONAME) + " could not be used: " + e, library, version, 0, 0);
        }
    }

    private static CudaProbe failedProbe(CudaException e, Optional<Path> library, int version) {
        String where = "The CUDA driver " + library.map(Path::toString).orElse(CudaLibrary.SONAME) + " (version "
                + versionString(version) + ")";
        if (e.result() == NO_DEVICE) {
            return new CudaProbe(CudaStatus.NO_DEVICE, where + " is installed, but there is no GPU: " + e.getMessage()
                    + ". Check 'nvidia-smi'; is the nvidia kernel module loaded? In a container, pass the GPU in "
                    + "(docker run --gpus all)." + CudaLibrary.visibleDevicesNote(System.getenv()),
                    library, version, 0, e.result());
        }
        if (e.result() == STUB_LIBRARY) {
            return new CudaProbe(CudaStatus.STUB_LIBRARY, where + " is the CUDA toolkit's stub library, not the "
                    + "driver: " + e.getMessage() + ". " + CudaLibrary.INSTALL_HINT, library, version, 0, e.result());
        }
        return new CudaProbe(CudaStatus.INIT_FAILED, where + " failed to initialize: " + e.getMessage()
                + ". A driver/kernel-module version mismatch (after an upgrade without reboot) is the usual cause; "
                + "see 'nvidia-smi' and dmesg.", library, version, 0, e.result());
    }

    /** cuDriverGetVersion: 1000 * major + 10 * minor, e.g. 12040 for CUDA 12.4. Loads the library, needs no GPU. */
    public static int driverVersion() {
        CudaLibrary.load();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(CudaDriver.C_INT);
            CudaResult.check(CudaDriver.cuDriverGetVersion(v), "cuDriverGetVersion");
            return v.get(CudaDriver.C_INT, 0);
        }
    }

    /** Number of CUDA devices; 0 when the driver is installed but reports CUDA_ERROR_NO_DEVICE. */
    public static int deviceCount() {
        try {
            init();
        } catch (CudaException e) {
            if (e.result() == NO_DEVICE) {
                return 0;
            }
            throw e;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment n = arena.allocate(CudaDriver.C_INT);
            CudaResult.check(CudaDriver.cuDeviceGetCount(n), "cuDeviceGetCount");
            return n.get(CudaDriver.C_INT, 0);
        }
    }

    /** The device with CUDA ordinal {@code ordinal} (as nvidia-smi counts, after CUDA_VISIBLE_DEVICES). */
    public static CudaDevice device(int ordinal) {
        init();
        if (ordinal < 0) {
            throw new IllegalArgumentException("device ordinal must be >= 0, got " + ordinal);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment d = arena.allocate(CudaDriver.C_INT);
            CudaResult.check(CudaDriver.cuDeviceGet(d, ordinal), "cuDeviceGet", "ordinal " + ordinal);
            return new CudaDevice(ordinal, d.get(CudaDriver.C_INT, 0));
        }
    }

    public static List<CudaDevice> devices() {
        int n = deviceCount();
        List<CudaDevice> list = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            list.add(device(i));
        }
        return List.copyOf(list);
    }

    /** The libcuda.so.1 loaded in this process, if any; never loads it. */
    public static Optional<Path> loadedLibrary() {
        return CudaLibrary.loadedPath();
    }

    /** The path of the loaded libcuda.so.1 (loading it if needed). */
    public static Path libraryPath() {
        return CudaLibrary.load();
    }

    static String versionString(int version) {
        return version <= 0 ? "unknown" : version / 1000 + "." + version % 1000 / 10;
    }
}
