package io.rdma4j.transport.shm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Backing a mapping with memory must hold once the JIT has compiled it, too. */
class MappedFileTest {
    private static final int PAGES = 64;

    @Test
    void everyPageGetsMemoryAfterTheJitCompiledTheTouch() throws Exception {
        Path base = Path.of("/dev/shm");
        assumeTrue(Files.isDirectory(base), "needs a tmpfs at /dev/shm");
        Path dir = Files.createTempDirectory(base, "rdma4j-mappedfile-");
        try (MappedFile scratch = MappedFile.create(dir.resolve("scratch"), 256 * ShmLayout.PAGE)) {
            for (int i = 0; i < 20_000; i++) { // enough calls and loop passes for C2 to compile the loop
                MappedFile.backWithMemory(scratch.segment(), dir, 0, () -> "scratch");
            }
            Path file = dir.resolve("fresh");
            try (MappedFile fresh = MappedFile.create(file, PAGES * ShmLayout.PAGE)) {
                fresh.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, 5, (byte) 42);
                MappedFile.backWithMemory(fresh.segment(), dir, 0, () -> "fresh");
                assertTrue(allocatedKiB(file) >= PAGES * ShmLayout.PAGE / 1024, allocatedKiB(file) + " KiB allocated");
                assertEquals(42, fresh.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 5), "contents kept");
            }
        } finally {
            try (var files = Files.list(dir)) {
                for (Path f : files.toList()) {
                    Files.deleteIfExists(f);
                }
            }
            Files.deleteIfExists(dir);
        }
    }

    /**
     * A range that is not page-aligned (a small buffer at a cache-line offset) gets memory for
     * every page it reaches into, its last one included.
     */
    @Test
    void anUnalignedRangeGetsMemoryForEveryPageItReachesInto() throws Exception {
        Path base = Path.of("/dev/shm");
        assumeTrue(Files.isDirectory(base), "needs a tmpfs at /dev/shm");
        Path dir = Files.createTempDirectory(base, "rdma4j-mappedfile-");
        Path file = dir.resolve("small");
        try (MappedFile m = MappedFile.create(file, 4 * ShmLayout.PAGE)) {
            MappedFile.backWithMemory(m.segment().asSlice(ShmLayout.PAGE - 128, 4000), dir, 0, () -> "small");
            assertEquals(2 * ShmLayout.PAGE / 1024, allocatedKiB(file), "pages 0 and 1, nothing else");
        } finally {
            Files.deleteIfExists(file);
            Files.deleteIfExists(dir);
        }
    }

    private static long allocatedKiB(Path file) throws Exception {
        Process du = new ProcessBuilder("du", "-k", file.toString()).redirectErrorStream(true).start();
        String out = new String(du.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
        assertEquals(0, du.waitFor(), out);
        return Long.parseLong(out.trim().split("\\s+")[0]);
    }
}
