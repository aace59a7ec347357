package io.rdma4j.bench.jmh;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.TimeUnit;

/**
 * The fixed cost of an FFM downcall, which every verbs data-path call (post_send, poll_cq) pays:
 * trivial libc functions through a plain handle and through {@code Linker.Option.critical},
 * which skips the Java-to-native thread state transition (allowed for short calls that neither
 * block nor call back). {@code javaAbs} is the floor: the same work without a downcall.
 *
 * <p>The {@code memcmp*} benchmarks price what a verbs object's handle costs a data-path call
 * (a critical memcmp of 0 bytes, with the argument shapes of poll_cq and post_send): a segment
 * of a shared arena as an argument is acquired and released around the call, so that the arena
 * cannot close under it. {@code memcmpGlobalAndShared} is a raw handle beside a shared-arena
 * buffer; {@code memcmpTwoShared} a handle in its object's arena beside a buffer of another
 * (poll_cq: the CQ and the caller's work completions); {@code memcmpSameShared} both in one arena
 * (post_send: the QP and its bad_wr).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class DowncallBench {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final FunctionDescriptor INT_VOID = FunctionDescriptor.of(ValueLayout.JAVA_INT);
    private static final FunctionDescriptor LONG_LONG = FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG);
    private static final MethodHandle GETPID = handle("getpid", INT_VOID);
    private static final MethodHandle GETPID_CRITICAL = handle("getpid", INT_VOID, Linker.Option.critical(false));
    private static final MethodHandle LABS = handle("labs", LONG_LONG);
    private static final MethodHandle LABS_CRITICAL = handle("labs", LONG_LONG, Linker.Option.critical(false));

    private static final MethodHandle MEMCMP_CRITICAL = handle("memcmp", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG), Linker.Option.critical(false));

    private long value = -42;
    private final Arena handles = Arena.ofShared();
    private final Arena buffers = Arena.ofShared();
    private final MemorySegment buffer = buffers.allocate(64);
    private final MemorySegment rawHandle = MemorySegment.ofAddress(buffer.address()).reinterpret(64);
    private final MemorySegment scopedHandle = rawHandle.reinterpret(handles, null);
    private final MemorySegment sameArenaHandle = rawHandle.reinterpret(buffers, null);

    private static MethodHandle handle(String name, FunctionDescriptor fd, Linker.Option... options) {
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name)
                .orElseThrow(() -> new IllegalStateException("libc has no " + name)), fd, options);
    }

    @Benchmark
    public int getpid() throws Throwable {
        return (int) GETPID.invokeExact();
    }

    @Benchmark
    public int getpidCritical() throws Throwable {
        return (int) GETPID_CRITICAL.invokeExact();
    }

    @Benchmark
    public long labs() throws Throwable {
        return (long) LABS.invokeExact(value);
    }

    @Benchmark
    public long labsCritical() throws Throwable {
        return (long) LABS_CRITICAL.invokeExact(value);
    }

    @Benchmark
    public int memcmpGlobalAndShared() throws Throwable {
        return (int) MEMCMP_CRITICAL.invokeExact(rawHandle, buffer, 0L);
    }

    @Benchmark
    public int memcmpTwoShared() throws Throwable {
        return (int) MEMCMP_CRITICAL.invokeExact(scopedHandle, buffer, 0L);
    }

    @Benchmark
    public int memcmpSameShared() throws Throwable {
        return (int) MEMCMP_CRITICAL.invokeExact(sameArenaHandle, buffer, 0L);
    }

    @Benchmark
    public long javaAbs() {
        return Math.abs(value);
    }
}
