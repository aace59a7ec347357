package io.rdma4j.transport.shm;

import io.rdma4j.nativesupport.internal.LibC;
import io.rdma4j.transport.TransportException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.function.Supplier;

/**
 * One shared file mapped read-write into this process. Each mapping has its own shared arena so
 * it can be unmapped on its own (a dead peer's files, a closed transport); a thread that touches
 * the segment after {@link #close()} gets an {@link IllegalStateException}, never a crash. One
 * exception: a copy through libc's memmove ({@code BulkCopy}, 8 KiB and more) is not an access
 * the JDK tracks, so a close that another thread makes while such a copy runs (which the
 * transport's threading rule forbids) unmaps the memory under it.
 */
final class MappedFile implements AutoCloseable {
    private final Path path;
    private final Arena arena;
    private final MemorySegment segment;

    private MappedFile(Path path, Arena arena, MemorySegment segment) {
        this.path = path;
        this.arena = arena;
        this.segment = segment;
    }

    /**
     * Creates {@code path} (which must not exist; owner read/write only) of {@code size} bytes and
     * maps it. The file is sparse: pages cost memory only once written.
     */
    static MappedFile create(Path path, long size) {
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(path, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
            // Mapping past the end grows the file to the requested size.
            return new MappedFile(path, arena, ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena));
        } catch (FileAlreadyExistsException e) {
            arena.close();
            throw new IllegalStateException("shared file " + path + " already exists (two transports with one rank and pid?)", e);
        } catch (IOException e) {
            arena.close();
            deleteQuietly(path);
            throw new UncheckedIOException("cannot create shared file " + path + " of " + size + " bytes", e);
        } catch (RuntimeException e) {
            arena.close();
            deleteQuietly(path);
            throw e;
        }
    }

    /**
     * Gives every page of {@code range} (a part of a mapping of this process's, in {@code dir})
     * its memory now, rewriting one byte per page with its own value, as volatile accesses:
     * the JIT removes a plain store of the value just loaded from the same place (compiled by
     * C2, the plain form gave no page any memory), not a volatile one. A page of a full tmpfs
     * cannot be given memory, and touching it raises SIGBUS: here, in a Java access, the JVM
     * turns that into an error, which becomes a TransportException saying that rank
     * {@code rank} got no memory for {@code what}. Pages given memory here do not fault while the
     * buffer lives (its pages go back only when it is freed: {@link #giveBackMemory}), so the
     * copies into them that peers make with libc's memmove (BulkCopy), where a SIGBUS would end
     * the process, are safe.
     */
    private static final VarHandle PAGE_BYTE = ValueLayout.JAVA_BYTE.varHandle();

    static void backWithMemory(MemorySegment range, Path dir, int rank, Supplier<String> what) {
        try {
            long size = range.byteSize();
            if (size > 0) {
                PAGE_BYTE.setVolatile(range, 0L, (byte) PAGE_BYTE.getVolatile(range, 0L));
            }
            // every page the range reaches into, not every 4096th byte from its start: a range
            // that is not page-aligned ends in a page of its own
            for (long off = ShmLayout.align(range.address(), ShmLayout.PAGE) - range.address(); off < size;
                 off += ShmLayout.PAGE) {
                PAGE_BYTE.setVolatile(range, off, (byte) PAGE_BYTE.getVolatile(range, off));
            }
        } catch (InternalError fault) { // "a fault occurred in an unsafe memory access"
            throw new TransportException(-1, "shm: " + dir + " is full: rank " + rank + " got no memory for "
                    + what.get() + " (raise the tmpfs size, e.g. docker --shm-size, or set RDMA4J_SHM_DIR)", fault);
        }
    }

    private static final int MADV_REMOVE = 9; // Linux: frees the pages and the file's memory behind them

    /**
     * Gives the memory of the whole pages inside {@code range} back to the file system: the
     * file gets holes there, in every process's mapping of it, and its size stays. Best effort:
     * where madvise fails the memory simply stays. A page given back reads as zeros and gets
     * memory again when next touched, so whoever reuses the range backs it again first ({@link
     * #backWithMemory}).
     */
    static void giveBackMemory(MemorySegment range) {
        long page = LibC.pageSize();
        long from = ShmLayout.align(range.address(), page);
        long to = (range.address() + range.byteSize()) & -page;
        if (to > from) {
            LibC.madvise(from, to - from, MADV_REMOVE);
        }
    }

    /** Maps an existing file (a peer's) in full. */
    static MappedFile open(Path path) throws IOException {
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            return new MappedFile(path, arena, ch.map(FileChannel.MapMode.READ_WRITE, 0, ch.size(), arena));
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    Path path() {
        return path;
    }

    MemorySegment segment() {
        return segment;
    }

    /**
     * Unmaps; idempotent. If another thread is inside an access to the mapping right now (a
     * close racing an operation, which the transport's threading rule forbids but must survive),
     * the JDK refuses or interrupts that access; the mapping is then left in place rather than
     * pulled from under a running copy.
     */
    @Override
    public void close() {
        try {
            if (arena.scope().isAlive()) {
                arena.close();
            }
        } catch (IllegalStateException inUse) {
            // see above: never unmap memory that a thread is copying
        }
    }

    static boolean deleteQuietly(Path path) {
        try {
            return Files.deleteIfExists(path);
        } catch (IOException e) {
            return false;
        }
    }
}
