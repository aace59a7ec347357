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
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Anonymous 2 MiB huge-page mappings (mmap with MAP_HUGETLB) for the buffer pool. They need
 * pages reserved by the administrator (vm.nr_hugepages); without them mmap fails with ENOMEM and
 * the pool falls back to normal pages, logging the reason.
 */
@SuppressWarnings("restricted")
final class HugePages {
    static final long PAGE = 2L << 20;
    private static final int PROT_READ = 1;
    private static final int PROT_WRITE = 2;
    private static final int MAP_PRIVATE = 2;
    private static final int MAP_ANONYMOUS = 0x20;
    private static final int MAP_HUGETLB = 0x40000;
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;

    static {
        Linker linker = Linker.nativeLinker();
        MMAP = linker.downcallHandle(linker.defaultLookup().find("mmap").orElseThrow(),
                FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG),
                Linker.Option.captureCallState("errno"));
        MUNMAP = linker.downcallHandle(linker.defaultLookup().find("munmap").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
    }

    private HugePages() {
    }

    /** Outcome of {@link #map}: the memory, or why there is none. */
    record Mapping(MemorySegment memory, String failure) {
    }

    /** Maps {@code bytes} (rounded up to whole huge pages) of zeroed huge-page memory. */
    static Mapping map(long bytes) {
        long size = Striping.alignUp(bytes, PAGE);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            MemorySegment p = (MemorySegment) MMAP.invokeExact(state, MemorySegment.NULL, size,
                    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0L);
            if (p.address() == -1L || p.address() == 0L) {
                int errno = (int) ERRNO.get(state, 0L);
                return new Mapping(null, "mmap(MAP_HUGETLB, " + size + " bytes) failed with errno " + errno
                        + (errno == 12 ? " (ENOMEM: no free 2 MiB pages; reserve some with sysctl vm.nr_hugepages=N)" : ""));
            }
            return new Mapping(p.reinterpret(size), null);
        } catch (Throwable t) {
            return new Mapping(null, "mmap(MAP_HUGETLB) is not callable: " + t);
        }
    }

    static void unmap(MemorySegment memory) {
        try {
            int rc = (int) MUNMAP.invokeExact(memory, memory.byteSize());
            if (rc != 0) {
                System.getLogger(HugePages.class.getName()).log(System.Logger.Level.WARNING,
                        "munmap of a " + memory.byteSize() + "-byte huge-page mapping failed");
            }
        } catch (Throwable t) {
            throw new IllegalStateException("munmap failed", t);
        }
    }
}
