package io.rdma4j.verbs;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;

/**
 * One of the two native libraries rdma4j binds (libibverbs, librdmacm), probed and loaded on
 * first use rather than in a static initializer, so that a machine without them can still load
 * every class, print a device report and run the host tests.
 *
 * <p>The jextract-generated header classes look symbols up through
 * {@link SymbolLookup#loaderLookup()}, so a successful load also registers the library with this
 * class loader ({@link System#load}) under the path the dynamic linker resolved for the soname.
 *
 * <p>The soname can be overridden with a system property ({@code rdma4j.libibverbs},
 * {@code rdma4j.librdmacm}), e.g. to point at an rdma-core build, or at a name that does not
 * exist to see the missing-library report.
 */
@SuppressWarnings("restricted")
public final class NativeLibrary {
    public static final NativeLibrary IBVERBS = new NativeLibrary("libibverbs",
            System.getProperty("rdma4j.libibverbs", "libibverbs.so.1"), NativeLibraryHints.IBVERBS,
            RequiredSymbols.IBVERBS);
    public static final NativeLibrary RDMACM = new NativeLibrary("librdmacm",
            System.getProperty("rdma4j.librdmacm", "librdmacm.so.1"), NativeLibraryHints.RDMACM,
            RequiredSymbols.RDMACM);

    private final String displayName;
    private final String soname;
    private final String installHint;
    private final String[] required;
    private volatile SymbolLookup lookup;
    private volatile LibraryMissingException failure;

    NativeLibrary(String displayName, String soname, String installHint, String... required) {
        this.displayName = displayName;
        this.soname = soname;
        this.installHint = installHint;
        this.required = required.clone();
    }

    /**
     * Loads librdmacm and the libibverbs it hands contexts and QPs of: what every rdma_cm entry
     * point calls before it touches a handle, so that a missing library is this class's
     * {@link LibraryMissingException}, not a failed class initialisation.
     */
    static void loadRdmaCm() {
        IBVERBS.load();
        RDMACM.load();
    }

    public String soname() {
        return soname;
    }

    /** True when the library is (or can now be) loaded; never throws. */
    public boolean isAvailable() {
        try {
            load();
            return true;
        } catch (LibraryMissingException e) {
            return false;
        }
    }

    /**
     * Loads the library once; later calls return the cached lookup or rethrow the cached failure.
     * A library that lacks one of the symbols rdma4j calls (one older than it needs) fails here,
     * with what to upgrade, rather than at the first call that needs the symbol.
     */
    public SymbolLookup load() {
        SymbolLookup l = lookup;
        if (l != null) {
            return l;
        }
        synchronized (this) {
            if (lookup == null && failure == null) {
                try {
                    SymbolLookup found = SymbolLookup.libraryLookup(soname, Arena.global());
                    Optional<String> absent = Arrays.stream(required).filter(s -> found.find(s).isEmpty()).findFirst();
                    if (absent.isPresent()) {
                        failure = tooOld(absent.get());
                    } else {
                        failure = register(resolvedPath());
                        if (failure == null) {
                            lookup = found;
                        }
                    }
                } catch (IllegalArgumentException | UnsatisfiedLinkError e) {
                    failure = new LibraryMissingException(displayName + " (" + soname + ") could not be loaded: "
                            + e.getMessage() + ". Install it: " + installHint + ".");
                }
            }
            if (failure != null) {
                throw failure;
            }
            return lookup;
        }
    }

    /**
     * Registers the library the dynamic linker found with this class loader, where the generated
     * classes look its symbols up; null when they can see them now, else why not. The library is
     * installed at this point: a failure here is no reason to install it (a second class loader of
     * rdma4j in this JVM: the JDK lets one loader register a library).
     */
    private LibraryMissingException register(Optional<Path> file) {
        String installed = displayName + " (" + soname + ") is installed" + file.map(p -> " (" + p + ")").orElse("")
                + " but could not be registered with the class loader of rdma4j's verbs classes: ";
        try {
            file.ifPresent(p -> System.load(p.toString()));
        } catch (UnsatisfiedLinkError e) {
            return new LibraryMissingException(installed + e.getMessage() + ". One class loader per JVM may load "
                    + "rdma4j's verbs classes; load them from a loader the others share (e.g. the application's, "
                    + "not a per-task one).");
        }
        if (required.length == 0 || SymbolLookup.loaderLookup().find(required[0]).isPresent()) {
            return null;
        }
        return new LibraryMissingException(installed + (file.isEmpty()
                ? "its file was not found among this process's mappings (/proc/self/maps unreadable, or the library "
                        + "mapped under another name); name it with -Drdma4j." + displayName + "=/path/to/" + soname
                : "its symbols are not visible to this class loader") + ".");
    }

    /** The library's address of {@code symbol}, loading the library first. */
    public MemorySegment symbol(String symbol) {
        return load().find(symbol).orElseThrow(() -> tooOld(symbol));
    }

    private LibraryMissingException tooOld(String symbol) {
        return new LibraryMissingException(displayName + " (" + soname + ") has no symbol " + symbol
                + "; it is older than rdma4j needs (rdma-core >= 34). Upgrade it: " + installHint + ".");
    }

    /**
     * The file the dynamic linker mapped for our soname, read back from /proc/self/maps so that
     * System.load registers exactly the object dlopen found (LD_LIBRARY_PATH and ld.so.cache
     * included) instead of guessing directories.
     */
    private Optional<Path> resolvedPath() {
        if (soname.indexOf('/') >= 0) {
            return Optional.of(Path.of(soname).toAbsolutePath()); // System.load takes absolute paths only
        }
        try (var lines = Files.lines(Path.of("/proc/self/maps"))) {
            return lines.map(line -> {
                        int slash = line.indexOf('/');
                        return slash < 0 ? null : Path.of(line.substring(slash));
                    })
                    .filter(p -> p != null && p.getFileName().toString().startsWith(soname))
                    .findFirst();
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    @Override
    public String toString() {
        return displayName + " (" + soname + ")";
    }
}
