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

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.TimeUnit;

/**
 * The fixed cost of an FFM downcall, which every verbs data-path call (post_send, poll_cq) pays:
 * trivial libc functions through a plain handle and through {@code Linker.Option.critical},
 * which skips the Java-to-native thread state transition (allowed for short calls that neither
 * block nor call back). {@code javaAbs} is the floor: the same work without a downcall.
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

    private long value = -42;

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
    public long javaAbs() {
        return Math.abs(value);
    }
}
