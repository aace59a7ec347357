package io.rdma4j.cuda;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Finds libcuda.so.1 and loads it into this class loader, once, on first use.
 *
 * <p>The generated {@code CudaDriver} resolves its functions through
 * {@link SymbolLookup#loaderLookup()}, which only sees libraries that code of this class loader
 * loaded with {@link System#load}; so the library is located here, by absolute path, before the
 * first generated call. Nothing is loaded in a static initializer: a machine without a GPU can
 * load every class and ask {@link Cuda#probe()} what is missing.
 *
 * <p>Where it looks, in order:
 * <ol>
 *   <li>{@code -Drdma4j.libcuda=/abs/path} or {@code RDMA4J_LIBCUDA=/abs/path} (tests use this to
 *       load a stub; nothing else is tried when it is set);</li>
 *   <li>the dynamic linker's own search for the soname (LD_LIBRARY_PATH, /etc/ld.so.cache,
 *       default dirs), the path read back from /proc/self/maps;</li>
 *   <li>directories the NVIDIA container toolkit and WSL use, often not in ld.so.cache.</li>
 * </ol>
 * The CUDA toolkit's {@code lib64/stubs/libcuda.so} is a link-time stub whose every call fails
 * with CUDA_ERROR_STUB_LIBRARY; a path under a {@code stubs} directory is refused.
 */
final class CudaLibrary {
    static final String SONAME = "libcuda.so.1";
    static final String PROPERTY = Cuda.LIBRARY_PROPERTY;
    static final String ENVIRONMENT = "RDMA4J_LIBCUDA";
    static final List<Path> EXTRA_DIRS = List.of(Path.of("/usr/local/nvidia/lib64"), Path.of("/usr/local/nvidia/lib"),
            Path.of("/usr/lib/wsl/lib"), Path.of("/run/opengl-driver/lib"), Path.of("/usr/lib64/nvidia"),
            Path.of("/usr/lib/x86_64-linux-gnu/nvidia/current"), Path.of("/usr/lib/aarch64-linux-gnu/nvidia/current"));
    static final String INSTALL_HINT = SONAME + " is installed by the NVIDIA driver, not by the CUDA toolkit: "
            + "Debian: sudo apt-get install nvidia-driver (the libcuda1 package, from non-free); "
            + "Ubuntu: sudo apt-get install nvidia-driver-<version> (libnvidia-compute-<version>); "
            + "RHEL/Fedora: sudo dnf install nvidia-driver-cuda-libs (or cuda-drivers); "
            + "in a container, run it with the NVIDIA Container Toolkit (docker run --gpus all). "
            + "If the library is elsewhere, set " + ENVIRONMENT + " or -D" + PROPERTY + " to its absolute path.";

    /**
     * The driver functions the CUDA layer calls wherever it runs: a library that lacks one is not
     * the driver, or a driver older than CUDA 11.0 (R450; cuDevicePrimaryCtxRelease_v2 is the
     * newest of them). Checked when the library is loaded, so that a call finds them all.
     */
    static final List<String> REQUIRED_FUNCTIONS = List.of("cuInit", "cuDriverGetVersion", "cuGetErrorName",
            "cuGetErrorString", "cuDeviceGet", "cuDeviceGetCount", "cuDeviceGetName", "cuDeviceGetPCIBusId",
            "cuDeviceGetAttribute", "cuDeviceTotalMem_v2", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2",
            "cuCtxSetCurrent", "cuCtxSynchronize", "cuMemGetInfo_v2", "cuMemAlloc_v2", "cuMemFree_v2",
            "cuMemHostAlloc", "cuMemFreeHost", "cuMemHostRegister_v2", "cuMemHostUnregister", "cuMemcpyHtoD_v2",
            "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2",
            "cuMemcpyDtoDAsync_v2", "cuMemsetD8_v2", "cuMemsetD8Async", "cuPointerGetAttribute", "cuStreamCreate",
            "cuStreamDestroy_v2", "cuStreamQuery", "cuStreamWaitEvent", "cuEventCreate", "cuEventDestroy_v2",
            "cuEventRecord", "cuEventQuery", "cuEventElapsedTime");

    /** dma-buf export (CUDA 11.7, R515): the one newer function, which its callers check for with {@link #exports}. */
    static final String DMA_BUF_EXPORT = "cuMemGetHandleForAddressRange";

    private static Path loaded;

    private CudaLibrary() {
    }

    /**
     * Loads the library on the first successful call and returns its path. A failure is not
     * remembered: the search is cheap, and a library that appears later (or a test that points
     * the property at a stub after a probe found none) is then picked up.
     */
    static synchronized Path load() {
        if (loaded == null) {
            Path path = locate(override(), CudaLibrary::viaDynamicLinker, EXTRA_DIRS);
            try {
                System.load(path.toString());
            } catch (UnsatisfiedLinkError e) {
                throw new CudaLibraryMissingException("The CUDA driver library " + path + " could not be loaded: "
                        + e.getMessage() + ". " + INSTALL_HINT, e);
            }
            List<String> missing = REQUIRED_FUNCTIONS.stream().filter(f -> !exports(f)).toList();
            if (!missing.isEmpty()) {
                throw new CudaLibraryMissingException(path + " lacks " + String.join(", ", missing) + ": it is not the "
                        + "CUDA driver library, or a driver older than CUDA 11.0 (R450), the oldest rdma4j can use. "
                        + INSTALL_HINT);
            }
            loaded = path;
        }
        return loaded;
    }

    /**
     * Whether the libraries loaded into this class loader (the driver, once {@link #load()} ran)
     * export {@code function}; the generated bindings fail with a LinkageError, not a
     * {@link CudaException}, when a function is missing.
     */
    static boolean exports(String function) {
        return SymbolLookup.loaderLookup().find(function).isPresent();
    }

    /** The loaded library's path, if {@link #load()} succeeded. */
    static synchronized Optional<Path> loadedPath() {
        return Optional.ofNullable(loaded);
    }

    /** The override from the system property, else the environment; null when neither is set. */
    static String override() {
        String p = System.getProperty(PROPERTY);
        if (p != null && !p.isBlank()) {
            return p;
        }
        String e = System.getenv(ENVIRONMENT);
        return e == null || e.isBlank() ? null : e;
    }

    /** Where the dynamic linker would find a library by soname, or empty. */
    interface LinkerSearch {
        Optional<Path> find(String soname);
    }

    /**
     * The search itself, without loading anything, so that it can be tested with fake files.
     *
     * @throws CudaLibraryMissingException naming every place tried
     */
    static Path locate(String override, LinkerSearch linker, List<Path> extraDirs) {
        if (override != null) {
            Path p = Path.of(override);
            if (!p.isAbsolute()) {
                throw new CudaLibraryMissingException(ENVIRONMENT + "/" + PROPERTY + " must be an absolute path to "
                        + SONAME + ", got '" + override + "'");
            }
            if (!Files.isRegularFile(p)) {
                throw new CudaLibraryMissingException("The CUDA driver library named by " + ENVIRONMENT + "/" + PROPERTY
                        + " does not exist: " + p + ". " + INSTALL_HINT);
            }
            return p;
        }
        List<String> tried = new ArrayList<>();
        tried.add("the dynamic linker's search (LD_LIBRARY_PATH, /etc/ld.so.cache, /lib, /usr/lib)");
        Optional<Path> found = linker.find(SONAME);
        if (found.isPresent()) {
            return refuseToolkitStub(found.get());
        }
        for (Path dir : extraDirs) {
            Path candidate = dir.resolve(SONAME);
            tried.add(dir.toString());
            if (Files.isRegularFile(candidate)) {
                return refuseToolkitStub(candidate);
            }
        }
        throw new CudaLibraryMissingException("The CUDA driver library " + SONAME + " was not found (tried: "
                + String.join(", ", tried) + "), so no NVIDIA GPU can be used. " + INSTALL_HINT);
    }

    private static Path refuseToolkitStub(Path p) {
        for (Path part : p) {
            if (part.toString().equals("stubs")) {
                throw new CudaLibraryMissingException("Found " + p + ", which is the CUDA toolkit's link-time stub "
                        + "(every call fails with CUDA_ERROR_STUB_LIBRARY), not the driver; remove its directory "
                        + "from LD_LIBRARY_PATH. " + INSTALL_HINT);
            }
        }
        return p;
    }

    /**
     * dlopen by soname, then read back from /proc/self/maps which file the linker mapped, so that
     * System.load registers exactly that object.
     */
    @SuppressWarnings("restricted") // dlopen only; the symbols are used through the generated bindings
    private static Optional<Path> viaDynamicLinker(String soname) {
        try {
            SymbolLookup.libraryLookup(soname, Arena.global());
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
        try (var lines = Files.lines(Path.of("/proc/self/maps"))) {
            return lines.map(line -> {
                        int slash = line.indexOf('/');
                        return slash < 0 ? null : Path.of(line.substring(slash).strip());
                    })
                    .filter(p -> p != null && p.getFileName() != null && p.getFileName().toString().startsWith("libcuda.so"))
                    .findFirst();
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** For messages: the environment a no-device report should mention. */
    static String visibleDevicesNote(Map<String, String> env) {
        StringBuilder note = new StringBuilder();
        for (String name : List.of("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")) {
            String v = env.get(name);
            if (v != null) {
                note.append(" ").append(name).append("='").append(v).append("' is set and may hide devices.");
            }
        }
        return note.toString();
    }
}
