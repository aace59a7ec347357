package io.rdma4j.cuda.testing;

import io.rdma4j.cuda.Cuda;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The stub libcuda.so.1 of the tests (src/test/resources/.../stub_libcuda.c), compiled here with
 * gcc against our native-headers/cuda_driver.h, pointed to with -Drdma4j.libcuda, and driven
 * through its rdma4j_stub_* control functions (the same dlopen handle, so the same state as the
 * library the CUDA layer loads). One per JVM: a test that uses it needs a JVM in which no other
 * libcuda was loaded (cuda-ffi and transport run such tests in surefire executions of their own).
 * Shared with other modules' tests through cuda-ffi's test-jar.
 */
public final class StubCuda {
    private static StubCuda instance;

    public final Path library;
    private final MethodHandle inject;
    private final MethodHandle calls;
    private final MethodHandle configure;
    private final MethodHandle liveDeviceAllocations;
    private final MethodHandle liveHostAllocations;
    private final MethodHandle liveStreams;
    private final MethodHandle liveEvents;
    private final MethodHandle contextRetains;
    private final MethodHandle corruptNextDtoH;
    private final MethodHandle timing;

    @SuppressWarnings("restricted") // test-only: the stub's own symbols, for its control functions
    private StubCuda(Path library) {
        this.library = library;
        SymbolLookup stub = SymbolLookup.libraryLookup(library, Arena.global());
        inject = handle(stub, "rdma4j_stub_inject", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_INT,
                ValueLayout.JAVA_INT));
        calls = handle(stub, "rdma4j_stub_calls", FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
        configure = handle(stub, "rdma4j_stub_configure", FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT,
                ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        liveDeviceAllocations = handle(stub, "rdma4j_stub_live_device_allocations", FunctionDescriptor.of(ValueLayout.JAVA_INT));
        liveHostAllocations = handle(stub, "rdma4j_stub_live_host_allocations", FunctionDescriptor.of(ValueLayout.JAVA_INT));
        liveStreams = handle(stub, "rdma4j_stub_live_streams", FunctionDescriptor.of(ValueLayout.JAVA_INT));
        liveEvents = handle(stub, "rdma4j_stub_live_events", FunctionDescriptor.of(ValueLayout.JAVA_INT));
        contextRetains = handle(stub, "rdma4j_stub_primary_context_retains", FunctionDescriptor.of(ValueLayout.JAVA_INT,
                ValueLayout.JAVA_INT));
        corruptNextDtoH = handle(stub, "rdma4j_stub_corrupt_next_dtoh", FunctionDescriptor.ofVoid());
        timing = handle(stub, "rdma4j_stub_timing", FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    }

    /**
     * Compiles the stub (once per JVM) and makes it the libcuda the CUDA layer will load.
     * Skips the calling test, with the reason, when gcc is not installed.
     */
    public static synchronized StubCuda install() {
        return install(List.of());
    }

    /**
     * As {@link #install()}, the stub compiled with {@code defines} (e.g. {@code
     * STUB_CUDA_BEFORE_11_7}: a driver without cuMemGetHandleForAddressRange); the first call in a
     * JVM decides.
     */
    public static synchronized StubCuda install(List<String> defines) {
        if (instance == null) {
            Path lib = compile(defines);
            Assertions.assertTrue(Cuda.loadedLibrary().isEmpty(), "libcuda " + Cuda.loadedLibrary().orElse(null)
                    + " was loaded in this JVM before the stub: stub tests need a JVM of their own (a surefire "
                    + "execution of their own, see cuda-ffi/pom.xml)");
            System.setProperty(Cuda.LIBRARY_PROPERTY, lib.toString());
            instance = new StubCuda(lib);
        }
        return instance;
    }

    private static Path compile(List<String> defines) {
        Path headers = Path.of(System.getProperty("rdma4j.nativeHeaders", "../native-headers")).toAbsolutePath();
        Assertions.assertTrue(Files.isRegularFile(headers.resolve("cuda_driver.h")),
                "native-headers/cuda_driver.h not found at " + headers + " (set -Drdma4j.nativeHeaders)");
        try {
            Path dir = Files.createTempDirectory("rdma4j-stub-cuda");
            Path source = dir.resolve("stub_libcuda.c");
            try (InputStream in = StubCuda.class.getResourceAsStream("stub_libcuda.c")) {
                Assertions.assertNotNull(in, "test resource stub_libcuda.c missing");
                Files.copy(in, source);
            }
            Path lib = dir.resolve("libcuda.so.1");
            List<String> command = new ArrayList<>(List.of("gcc", "-shared", "-fPIC", "-O1", "-Wall", "-Wextra",
                    "-Werror", "-I" + headers, "-Wl,-soname,libcuda.so.1", "-o", lib.toString(), source.toString()));
            defines.forEach(d -> command.add("-D" + d));
            Process gcc;
            try {
                gcc = new ProcessBuilder(command).redirectErrorStream(true).start();
            } catch (IOException e) {
                Assumptions.abort("gcc is not installed, so the stub libcuda.so.1 cannot be built: " + e.getMessage());
                throw new AssertionError(e);
            }
            String output = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            Assertions.assertTrue(gcc.waitFor(120, TimeUnit.SECONDS), "gcc did not finish in 120 s");
            Assertions.assertEquals(0, gcc.exitValue(), "compiling the stub failed:\n" + output);
            lib.toFile().deleteOnExit();
            source.toFile().deleteOnExit();
            dir.toFile().deleteOnExit();
            return lib;
        } catch (IOException e) {
            throw new AssertionError("cannot build the stub libcuda", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @SuppressWarnings("restricted") // test-only downcalls into the stub's control functions
    private static MethodHandle handle(SymbolLookup lookup, String name, FunctionDescriptor descriptor) {
        return Linker.nativeLinker().downcallHandle(lookup.find(name).orElseThrow(
                () -> new AssertionError("stub lacks " + name)), descriptor);
    }

    /** The next {@code times} calls of {@code function} (negative: all; 0 clears) return {@code result}. */
    public void inject(String function, int result, int times) {
        try (Arena arena = Arena.ofConfined()) {
            inject.invokeExact(arena.allocateFrom(function), result, times);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    public long calls(String function) {
        try (Arena arena = Arena.ofConfined()) {
            return (long) calls.invokeExact(arena.allocateFrom(function));
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** What the STUB_CUDA_* environment variables would set; before the first cuInit. */
    public void configure(int initResult, int deviceCount, int driverVersion) {
        try {
            configure.invokeExact(initResult, deviceCount, driverVersion);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    public int liveDeviceAllocations() {
        return intCall(liveDeviceAllocations);
    }

    public int liveHostAllocations() {
        return intCall(liveHostAllocations);
    }

    public int liveStreams() {
        return intCall(liveStreams);
    }

    public int liveEvents() {
        return intCall(liveEvents);
    }

    public int primaryContextRetains(int device) {
        try {
            return (int) contextRetains.invokeExact(device);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    public void corruptNextDeviceToHostCopy() {
        try {
            corruptNextDtoH.invokeExact();
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * What STUB_CUDA_OP_DELAY_US and STUB_CUDA_SKIP_EVENT_WAITS set: each queued copy or memset
     * waits {@code delayMicros} before it runs, and with {@code skipEventWaits} events report
     * completion at once and streams do not wait for events. {@code (0, false)} restores the
     * defaults.
     */
    public void timing(int delayMicros, boolean skipEventWaits) {
        try {
            timing.invokeExact(delayMicros, skipEventWaits ? 1 : 0);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    private static int intCall(MethodHandle h) {
        try {
            return (int) h.invokeExact();
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }
}
