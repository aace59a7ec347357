package io.rdma4j.transport.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** Pins the calling thread to one CPU with sched_setaffinity(2) (Linux), for the completion thread. */
@SuppressWarnings("restricted")
final class CpuAffinity {
    /** glibc's cpu_set_t: 1024 bits. */
    private static final int CPU_SET_BYTES = 128;
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private CpuAffinity() {
    }

    /** Pins the calling thread to {@code cpu}; returns null on success, else why it failed. */
    static String pinCurrentThread(int cpu) {
        if (cpu < 0 || cpu >= CPU_SET_BYTES * 8) {
            return "CPU " + cpu + " is outside the " + CPU_SET_BYTES * 8 + " CPUs a cpu_set_t holds";
        }
        Linker linker = Linker.nativeLinker();
        var symbol = linker.defaultLookup().find("sched_setaffinity");
        if (symbol.isEmpty()) {
            return "sched_setaffinity is not available on this platform";
        }
        MethodHandle setAffinity = linker.downcallHandle(symbol.get(),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS), Linker.Option.captureCallState("errno"));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(CPU_SET_BYTES);
            mask.set(JAVA_BYTE, cpu / 8, (byte) (1 << (cpu % 8)));
            MemorySegment state = arena.allocate(CALL_STATE);
            int rc = (int) setAffinity.invokeExact(state, 0, (long) CPU_SET_BYTES, mask);
            if (rc != 0) {
                int errno = (int) ERRNO.get(state, 0L);
                return "sched_setaffinity(CPU " + cpu + ") failed with errno " + errno
                        + (errno == 22 ? " (EINVAL: no such CPU in this process's allowed set)" : "");
            }
            return null;
        } catch (Throwable t) {
            return "sched_setaffinity failed: " + t;
        }
    }
}
