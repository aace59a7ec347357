package io.rdma4j.cuda;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The search for libcuda.so.1, on fake files: nothing is loaded. */
class CudaLibraryLocateTest {
    private static final CudaLibrary.LinkerSearch NOT_FOUND = soname -> Optional.empty();

    @TempDir
    Path dir;

    private Path fakeLibrary(Path directory) throws IOException {
        Files.createDirectories(directory);
        return Files.writeString(directory.resolve("libcuda.so.1"), "not an ELF file");
    }

    @Test
    void overrideWinsAndNothingElseIsTried() throws IOException {
        Path lib = fakeLibrary(dir.resolve("custom"));
        Path located = CudaLibrary.locate(lib.toString(), soname -> {
            throw new AssertionError("the dynamic linker must not be asked when an override is set");
        }, List.of());
        assertEquals(lib, located);
    }

    @Test
    void missingOverrideNamesThePathAndTheDriverPackages() {
        Path missing = dir.resolve("nowhere/libcuda.so.1");
        var e = assertThrows(CudaLibraryMissingException.class,
                () -> CudaLibrary.locate(missing.toString(), NOT_FOUND, List.of()));
        assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("RDMA4J_LIBCUDA"), e.getMessage());
        assertTrue(e.getMessage().contains("libcuda1") && e.getMessage().contains("nvidia-driver"), e.getMessage());
    }

    @Test
    void relativeOverrideIsRefused() {
        var e = assertThrows(CudaLibraryMissingException.class,
                () -> CudaLibrary.locate("libcuda.so.1", NOT_FOUND, List.of()));
        assertTrue(e.getMessage().contains("absolute path"), e.getMessage());
    }

    @Test
    void dynamicLinkerResultIsUsedBeforeExtraDirectories() throws IOException {
        Path viaLinker = fakeLibrary(dir.resolve("ldcache"));
        Path extra = fakeLibrary(dir.resolve("extra")).getParent();
        assertEquals(viaLinker, CudaLibrary.locate(null, soname -> {
            assertEquals("libcuda.so.1", soname);
            return Optional.of(viaLinker);
        }, List.of(extra)));
    }

    @Test
    void extraDirectoriesAreSearchedInOrder() throws IOException {
        Path empty = Files.createDirectories(dir.resolve("empty"));
        Path second = fakeLibrary(dir.resolve("nvidia/lib64"));
        Path third = fakeLibrary(dir.resolve("wsl/lib"));
        assertEquals(second, CudaLibrary.locate(null, NOT_FOUND, List.of(empty, second.getParent(), third.getParent())));
    }

    @Test
    void toolkitStubIsRefusedWithTheReason() throws IOException {
        Path stub = fakeLibrary(dir.resolve("cuda/lib64/stubs"));
        var e = assertThrows(CudaLibraryMissingException.class,
                () -> CudaLibrary.locate(null, soname -> Optional.of(stub), List.of()));
        assertTrue(e.getMessage().contains("CUDA_ERROR_STUB_LIBRARY"), e.getMessage());
        assertTrue(e.getMessage().contains("LD_LIBRARY_PATH"), e.getMessage());
    }

    @Test
    void notFoundAnywhereListsWhatWasTriedAndWhatToInstall() {
        Path a = dir.resolve("a");
        Path b = dir.resolve("b");
        var e = assertThrows(CudaLibraryMissingException.class, () -> CudaLibrary.locate(null, NOT_FOUND, List.of(a, b)));
        String m = e.getMessage();
        assertTrue(m.contains("libcuda.so.1 was not found"), m);
        assertTrue(m.contains("LD_LIBRARY_PATH") && m.contains(a.toString()) && m.contains(b.toString()), m);
        assertTrue(m.contains("libcuda1") && m.contains("nvidia-driver"), m);
        assertTrue(m.contains("not by the CUDA toolkit"), m);
    }

    @Test
    void visibleDevicesVariablesAreMentionedOnlyWhenSet() {
        assertEquals("", CudaLibrary.visibleDevicesNote(Map.of("PATH", "/bin")));
        String note = CudaLibrary.visibleDevicesNote(Map.of("CUDA_VISIBLE_DEVICES", ""));
        assertTrue(note.contains("CUDA_VISIBLE_DEVICES=''"), note);
        assertFalse(note.contains("NVIDIA_VISIBLE_DEVICES"), note);
    }

    @Test
    void versionStringsReadLikeNvidiaSmi() {
        assertEquals("12.4", Cuda.versionString(12040));
        assertEquals("11.8", Cuda.versionString(11080));
        assertEquals("unknown", Cuda.versionString(0));
    }

    /**
     * The functions checked at load time are exactly those the hand-written layer calls, less the
     * newer one its callers check for: a call added without updating the list fails here, not
     * with a LinkageError on an older driver.
     */
    @Test
    void theFunctionsCheckedAtLoadAreTheOnesTheLayerCalls() throws IOException {
        Pattern call = Pattern.compile("CudaDriver\\.(cu[A-Za-z0-9_]+)\\(");
        Set<String> called = new TreeSet<>();
        try (var files = Files.list(Path.of("src/main/java/io/rdma4j/cuda"))) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                Matcher m = call.matcher(Files.readString(f));
                while (m.find()) {
                    called.add(m.group(1));
                }
            }
        }
        assertTrue(called.contains(CudaLibrary.DMA_BUF_EXPORT), called.toString());
        called.remove(CudaLibrary.DMA_BUF_EXPORT);
        assertEquals(called, new TreeSet<>(CudaLibrary.REQUIRED_FUNCTIONS));
        assertEquals(CudaLibrary.REQUIRED_FUNCTIONS.size(), called.size(), "listed twice");
    }
}
