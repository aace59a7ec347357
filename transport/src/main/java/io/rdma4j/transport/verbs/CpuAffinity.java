package io.rdma4j.transport.verbs;

import io.rdma4j.nativesupport.internal.LibC;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/** Pins the calling thread to one CPU with sched_setaffinity(2) (Linux), for the completion thread. */
final class CpuAffinity {
    /** glibc's cpu_set_t: 1024 bits. */
    private static final int CPU_SET_BYTES = 128;
    private static final int EINVAL = 22;

    private CpuAffinity() {
    }

    /** Pins the calling thread to {@code cpu}; returns null on success, else why it failed. */
    static String pinCurrentThread(int cpu) {
        if (cpu < 0 || cpu >= CPU_SET_BYTES * 8) {
            return "CPU " + cpu + " is outside the " + CPU_SET_BYTES * 8 + " CPUs a cpu_set_t holds";
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(CPU_SET_BYTES);
            mask.set(JAVA_BYTE, cpu / 8, (byte) (1 << (cpu % 8)));
            int rc = LibC.schedSetaffinity(0, CPU_SET_BYTES, mask);
            if (rc != 0) {
                return "sched_setaffinity(CPU " + cpu + ") failed with errno " + -rc
                        + (-rc == EINVAL ? " (EINVAL: no such CPU in this process's allowed set)" : "");
            }
            return null;
        } catch (UnsupportedOperationException e) {
            return e.getMessage();
        }
    }
}
