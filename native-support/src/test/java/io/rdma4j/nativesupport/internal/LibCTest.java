package io.rdma4j.nativesupport.internal;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The libc binding on this (Linux) machine: results as the kernel gives them, failures as -errno. */
class LibCTest {
    private static final int EBADF = 9;
    private static final int EINVAL = 22;
    private static final long SYS_GETPID_X86_64 = 39;

    @Test
    void pageSizeIsWhatTheKernelUses() throws IOException {
        long page = LibC.pageSize();
        assertTrue(page >= 4096 && Long.bitCount(page) == 1, "page size " + page);
        // /proc/self/smaps reports the kernel page size of every mapping, in kB
        String smaps = Files.readString(Path.of("/proc/self/smaps"));
        assertTrue(java.util.regex.Pattern.compile("KernelPageSize:\\s+" + page / 1024 + " kB").matcher(smaps).find(),
                "no mapping with " + page + " B pages");
    }

    @Test
    void failuresComeBackAsMinusErrno() {
        assertEquals(-EBADF, LibC.close(-1));
        assertEquals(-EBADF, LibC.fcntl(-1, 1 /* F_GETFD */, 0));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment emptyMask = arena.allocate(128);
            assertEquals(-EINVAL, LibC.schedSetaffinity(0, 128, emptyMask), "no CPU in the mask");
        }
    }

    @Test
    void pollWithNothingToWatchTimesOut() {
        long start = System.nanoTime();
        assertEquals(0, LibC.poll(MemorySegment.NULL, 0, 20));
        assertTrue(System.nanoTime() - start >= 15_000_000L, "poll returned before its timeout");
    }

    @Test
    void syscallReturnsTheKernelsResult() {
        assertTrue(LibC.hasSyscall());
        if ("amd64".equals(System.getProperty("os.arch"))) {
            assertEquals(ProcessHandle.current().pid(), LibC.syscall(SYS_GETPID_X86_64, 0, 0, 0, 0, 0));
        }
    }

    /** The futex calls the shared-memory transport makes: a wait on a changed word returns at once, a wake counts sleepers. */
    @Test
    void futexWaitOnAChangedWordAndWakeWithoutSleepers() {
        if (!"amd64".equals(System.getProperty("os.arch"))) {
            return;
        }
        long sysFutex = 202;
        int eagain = 11;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment word = arena.allocate(8, 8);
            word.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, 5);
            MemorySegment timeout = arena.allocate(16, 8);
            timeout.set(java.lang.foreign.ValueLayout.JAVA_LONG, 8, 50_000_000L);
            assertEquals(-eagain, LibC.syscall(sysFutex, word.address(), 0 /* FUTEX_WAIT */, 4, timeout.address(), 0),
                    "a wait on a word that no longer holds 4 returns at once");
            long start = System.nanoTime();
            long waited = LibC.syscall(sysFutex, word.address(), 0, 5, timeout.address(), 0);
            assertEquals(-110 /* ETIMEDOUT */, waited, "a wait on an unchanged word sleeps until its timeout");
            assertTrue(System.nanoTime() - start >= 40_000_000L, "it slept");
            assertEquals(0, LibC.syscall(sysFutex, word.address(), 1 /* FUTEX_WAKE */, Integer.MAX_VALUE, 0, 0));
        }
    }

    @Test
    void fcntlOnAnOpenDescriptorReturnsItsFlags() throws IOException {
        // fd 0..2 may be closed under a test runner; a file opened through /proc/self/fd is ours
        Path tmp = Files.createTempFile("rdma4j-libc", ".txt");
        try (var channel = java.nio.channels.FileChannel.open(tmp)) {
            long fd = Files.list(Path.of("/proc/self/fd")).map(p -> {
                try {
                    return Files.readSymbolicLink(p).equals(tmp) ? Long.parseLong(p.getFileName().toString()) : -1L;
                } catch (IOException e) {
                    return -1L;
                }
            }).filter(v -> v >= 0).findFirst().orElseThrow();
            int flags = LibC.fcntl((int) fd, 3 /* F_GETFL */, 0);
            assertTrue(flags >= 0, "F_GETFL: " + flags);
            assertEquals(0, flags & 3, "opened read-only (O_RDONLY)");
        } finally {
            Files.delete(tmp);
        }
    }
}
