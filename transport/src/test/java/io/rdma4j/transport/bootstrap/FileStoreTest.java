package io.rdma4j.transport.bootstrap;

import io.rdma4j.transport.TransportTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FileStoreTest extends StoreContractTest {
    @TempDir
    Path dir;

    @Override
    protected Store newClient() {
        return new FileStore(dir.resolve("store"));
    }

    @Override
    protected void closeStore() {
    }

    /** The longest key a file name holds can be set too: the temporary file is not named after it. */
    @Test
    void theLongestKeyTheStoreAcceptsCanBeSetAndRead() {
        Store s = client();
        String key = "x".repeat(248); // "k_" + 248 characters: the 250 the store allows
        s.set(key, new byte[] {1});
        org.junit.jupiter.api.Assertions.assertArrayEquals(new byte[] {1}, s.get(key, Duration.ZERO));
    }

    @Test
    void setIsAtomicAndLeavesNoTemporaryFiles() throws Exception {
        Store s = client();
        s.set("k", new byte[100]);
        try (var files = Files.list(dir.resolve("store"))) {
            assertEquals(List.of("k_k"), files.map(p -> p.getFileName().toString()).toList());
        }
    }

    /** Counters are atomic across processes, not only across threads of one. */
    @Test
    void addIsAtomicAcrossProcesses() throws Exception {
        Path store = dir.resolve("store");
        List<Process> ps = new ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                ps.add(new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classPath(), Adder.class.getName(), store.toString())
                        .inheritIO().start());
            }
            for (Process p : ps) {
                assertTrue(p.waitFor(30, TimeUnit.SECONDS), "adder did not finish");
                assertEquals(0, p.exitValue());
            }
        } finally {
            ps.forEach(Process::destroyForcibly);
        }
        assertEquals("400", new String(new FileStore(store).get("n", Duration.ZERO), StandardCharsets.UTF_8));
    }

    private static String classPath() throws Exception {
        return Path.of(FileStoreTest.class.getProtectionDomain().getCodeSource().getLocation().toURI()) + java.io.File.pathSeparator
                + Path.of(FileStore.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    public static final class Adder {
        public static void main(String[] args) {
            FileStore s = new FileStore(Path.of(args[0]));
            for (int i = 0; i < 200; i++) {
                s.add("n", 1);
            }
        }
    }

    /** Values may be secrets (the TCP provider's endpoints): only the owner reads them. */
    @Test
    void aNewDirectoryAndEveryValueAreTheOwnersOnly() throws Exception {
        Store s = client();
        s.set("rdma4j/tcp/endpoint/0", "secret".getBytes(StandardCharsets.UTF_8));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("store"))));
        try (var files = Files.list(dir.resolve("store"))) {
            for (Path f : files.filter(p -> p.getFileName().toString().startsWith("k_")).toList()) {
                assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)), f.toString());
            }
        }
    }

    /**
     * A process that holds the directory's lock and never lets go (stopped, or on a hung
     * filesystem): add gives up at its lock timeout, naming that process, and works again once
     * the holder is gone.
     */
    @Test
    void addGivesUpAtItsLockTimeoutAndNamesTheProcessHoldingTheLock() throws Exception {
        Path store = dir.resolve("store");
        FileStore s = new FileStore(store, Duration.ofMillis(500));
        Process holder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classPath(), LockHolder.class.getName(),
                store.resolve(".lock").toString()).redirectErrorStream(true).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
            assertEquals("locked", out.readLine());
            long start = System.nanoTime();
            TransportTimeoutException e = assertThrows(TransportTimeoutException.class, () -> s.add("n", 1));
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(waitedMs >= 450 && waitedMs < 10_000, waitedMs + " ms");
            assertTrue(e.getMessage().contains("within 500 ms"), e.getMessage());
            if (Files.isReadable(Path.of("/proc/locks"))) { // where the kernel lists its locks, the holder is named
                assertTrue(e.getMessage().contains("process " + holder.pid() + " holds it"), e.getMessage());
            }
        } finally {
            holder.destroyForcibly().waitFor();
        }
        assertEquals(1, s.add("n", 1));
    }

    public static final class LockHolder {
        public static void main(String[] args) throws Exception {
            try (FileChannel c = FileChannel.open(Path.of(args[0]), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                 FileLock ignored = c.lock()) {
                System.out.println("locked");
                System.out.flush();
                Thread.sleep(60_000);
            }
        }
    }
}
