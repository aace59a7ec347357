package io.rdma4j.nativesupport.internal;

import java.lang.foreign.MemorySegment;
import java.lang.ref.Reference;
import java.util.Objects;

/**
 * Copies bulk data between native segments with the C library's {@code memmove} instead of
 * {@link MemorySegment#copy}, whose JIT stub copies with vector loads and stores. A vector store
 * must first own the destination's cache line, and when that line sits in another core's cache
 * (a message written into the receiver's buffer, a shared window its peers read) each one waits
 * for the other core; glibc's {@code memmove} copies large blocks with {@code rep movsb} (or
 * non-temporal stores), which write whole lines without fetching them first.
 *
 * <p>Measured on the 2-vCPU VM of benchmarks/results, a 2-rank shm allreduce (ring) with the two
 * builds taking turns ({@code allreduce-perf --ranks 2 -b 64K -e 4M -f 4 -n 50 -w 10 -R 3 -p out},
 * eight pairs): while the VM's two vCPUs were 215-250 ns apart (the cache-line hand-off of
 * {@code benchmarks/c/core_latency}), 1 MiB took 188-224 us before and 74-102 us after, 4 MiB
 * 784-905 and 295-381, 64 KiB 17-21 and 8.5-12.5. While they were 50 ns apart (probably two
 * hyperthreads of one core, sharing their caches) both builds were 2x faster and the change did
 * not show beyond the noise (1 MiB 62 / 65 before, 59 / 90 after). To re-measure, turn it off with
 * {@code -Drdma4j.memmove=false} or {@code RDMA4J_MEMMOVE=0} in one of two runs.
 *
 * <p>Below {@link #MIN_BYTES} glibc too copies with vector stores and the downcall's fixed cost
 * would only add. The checks of {@code MemorySegment.copy} but one: bounds, closed arenas and
 * read-only targets are checked (throwing as it throws), overlapping ranges are allowed, and a
 * heap segment, a segment confined to another thread or a platform without memmove falls back to
 * {@code MemorySegment.copy}; but memmove takes raw addresses (slices passed instead would be
 * allocated on every call) and is not an access the JVM tracks. Memory that another thread
 * unmaps while the copy runs (forbidden anyway: a buffer handed to an operation stays alive until
 * it completed), or a page that faults (a file mapping on a full tmpfs), ends the process instead
 * of throwing; the shm transport therefore gives its mappings memory when it creates them.
 */
public final class BulkCopy {
    /**
     * The size from which {@code memmove} is used: glibc's x86-64 {@code memmove} turns to
     * {@code rep movsb} above 2-8 KiB (its {@code x86_rep_movsb_threshold} tunable, which grows
     * with the vector width).
     */
    public static final long MIN_BYTES = 8192;
    private static final boolean ENABLED = memmoveLinked()
            && enabled(System.getProperty("rdma4j.memmove"), System.getenv("RDMA4J_MEMMOVE"));

    private BulkCopy() {
    }

    /** Whether memmove copies are on: unless the property, else the variable, turns them off ({@link OffSwitch}). */
    static boolean enabled(String property, String env) {
        return !OffSwitch.turnedOff(property, env);
    }

    /** Whether libc's memmove could be bound (no native access, no libc: copies stay MemorySegment.copy). */
    private static boolean memmoveLinked() {
        try {
            return LibC.hasMemmove();
        } catch (LinkageError | RuntimeException unavailable) {
            return false;
        }
    }

    /** Whether large copies go through memmove in this JVM. */
    public static boolean enabled() {
        return ENABLED;
    }

    /** {@link MemorySegment#copy(MemorySegment, long, MemorySegment, long, long)}, through memmove when large. */
    public static void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
        Thread self = Thread.currentThread();
        if (bytes < MIN_BYTES || !ENABLED || !src.isNative() || !dst.isNative() || !src.isAccessibleBy(self)
                || !dst.isAccessibleBy(self)) {
            MemorySegment.copy(src, srcOffset, dst, dstOffset, bytes);
            return;
        }
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("copy into a read-only segment");
        }
        Objects.checkFromIndexSize(srcOffset, bytes, src.byteSize());
        Objects.checkFromIndexSize(dstOffset, bytes, dst.byteSize());
        if (!src.scope().isAlive() || !dst.scope().isAlive()) {
            throw new IllegalStateException("copy between segments of which one is already closed");
        }
        LibC.memmove(dst.address() + dstOffset, src.address() + srcOffset, bytes);
        // an automatic arena's memory must not be freed before the copy returned
        Reference.reachabilityFence(src);
        Reference.reachabilityFence(dst);
    }
}
