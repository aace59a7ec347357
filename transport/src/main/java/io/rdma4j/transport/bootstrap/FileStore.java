package io.rdma4j.transport.bootstrap;

import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.TransportTimeoutException;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A {@link Store} for ranks on one host: one file per key in a shared directory. A set writes a
 * temporary file and renames it into place atomically, so a reader sees the whole value or
 * nothing; counters are read-modify-written under an exclusive lock on {@code .lock} in the
 * directory, which {@link #add} waits for up to its lock timeout, polling at most 1 ms apart. A
 * {@link #get} polls with a growing pause (up to 20 ms). Trusts whoever can write the directory,
 * so give it owner-only permissions; a directory it creates has them, and every value file is
 * readable by its owner only (values include the TCP provider's connection secrets).
 * Keys outlive the store's clients (nothing is deleted on close), so a job's directory must be
 * its own: a directory reused by the next job hands it the previous job's values.
 */
public final class FileStore implements Store {
    private static final String LOCK_FILE = ".lock";
    /** File locks are per process; threads of one process are serialised by this lock first. */
    private static final ReentrantLock PROCESS_LOCK = new ReentrantLock();
    private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY_DIRECTORY =
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------"));
    private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY_FILE =
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));

    /**
     * How long {@link #add} waits for the directory's lock by default. A holder keeps it for one
     * read and one rename, so a wait this long means the holder is stopped or its filesystem hangs.
     */
    public static final Duration DEFAULT_LOCK_TIMEOUT = Duration.ofSeconds(60);

    private final Path dir;
    private final long lockTimeoutNanos;

    public FileStore(Path dir) {
        this(dir, DEFAULT_LOCK_TIMEOUT);
    }

    /** @param lockTimeout how long {@link #add} waits for the directory's lock before it fails, naming the holder */
    public FileStore(Path dir, Duration lockTimeout) {
        if (lockTimeout.isNegative()) {
            throw new IllegalArgumentException("negative lock timeout " + lockTimeout);
        }
        this.lockTimeoutNanos = TimeUnit.NANOSECONDS.convert(lockTimeout);
        try {
            this.dir = Files.createDirectories(dir, OWNER_ONLY_DIRECTORY);
        } catch (IOException e) {
            throw new TransportException(-1, "cannot create the file store directory " + dir + ": " + e, e);
        }
    }

    public Path directory() {
        return dir;
    }

    /** File name of a key: safe characters kept, every other byte as %XX. */
    private Path file(String key) {
        StoreProtocol.checkKey(key);
        StringBuilder b = new StringBuilder("k_");
        for (byte c : key.getBytes(StandardCharsets.UTF_8)) {
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.') {
                b.append((char) c);
            } else {
                b.append('%').append(Character.forDigit((c >> 4) & 15, 16)).append(Character.forDigit(c & 15, 16));
            }
        }
        if (b.length() > 250) {
            throw new IllegalArgumentException("store key too long for a file store: " + key);
        }
        return dir.resolve(b.toString());
    }

    @Override
    public void set(String key, byte[] value) {
        Path target = file(key);
        // not named after the key: the key's own name may already use up all a file name may hold
        Path tmp = dir.resolve(".tmp-" + ProcessHandle.current().pid() + "-"
                + Long.toHexString(ThreadLocalRandom.current().nextLong()));
        try {
            Files.write(Files.createFile(tmp, OWNER_ONLY_FILE), value);
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new TransportException(-1, "file store directory " + dir + " does not support atomic renames", e);
            }
        } catch (IOException e) {
            throw new TransportException(-1, "file store " + dir + " failed set '" + key + "': " + e, e);
        } finally {
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException ignored) {
                // only a leftover temporary file
            }
        }
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        Path f = file(key);
        long start = System.nanoTime();
        long waitNanos = Math.max(0, TimeUnit.NANOSECONDS.convert(timeout)); // saturates: FOREVER waits for good
        long pause = 50_000;
        while (true) {
            try {
                return Files.readAllBytes(f);
            } catch (NoSuchFileException e) {
                // not set yet
            } catch (IOException e) {
                throw new TransportException(-1, "file store " + dir + " failed get '" + key + "': " + e, e);
            }
            if (System.nanoTime() - start >= waitNanos) {
                throw new TransportTimeoutException(-1, "store key '" + key + "' was not set within "
                        + TimeUnit.MILLISECONDS.convert(timeout) + " ms (file store " + dir + ")");
            }
            LockSupport.parkNanos(pause);
            pause = Math.min(pause * 2, 20_000_000);
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                throw new TransportException(-1, "interrupted waiting for store key '" + key + "'");
            }
        }
    }

    @Override
    public long add(String key, long delta) {
        Path f = file(key);
        long deadline = System.nanoTime() + lockTimeoutNanos;
        lockProcess(key, deadline);
        try (FileChannel lockChannel = FileChannel.open(dir.resolve(LOCK_FILE), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            FileLock lock = lockFile(lockChannel, key, deadline);
            try {
                long value = delta;
                try {
                    value += StoreProtocol.parseCounter(key, Files.readAllBytes(f));
                } catch (NoSuchFileException e) {
                    // absent counters start at 0
                }
                set(key, StoreProtocol.counterBytes(value));
                return value;
            } finally {
                lock.release();
            }
        } catch (IOException e) {
            throw new TransportException(-1, "file store " + dir + " failed add '" + key + "': " + e, e);
        } finally {
            PROCESS_LOCK.unlock();
        }
    }

    private void lockProcess(String key, long deadline) {
        try {
            if (!PROCESS_LOCK.tryLock(deadline - System.nanoTime(), TimeUnit.NANOSECONDS)) {
                throw lockTimeout(key, "another thread of this process holds it");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw lockInterrupted(key);
        }
    }

    /** The exclusive lock on {@code .lock}, polled so that a holder that never lets go (stopped, or on a hung filesystem) ends the wait at the deadline. */
    private FileLock lockFile(FileChannel channel, String key, long deadline) throws IOException {
        long pause = 50_000;
        while (true) {
            FileLock lock = channel.tryLock();
            if (lock != null) {
                return lock;
            }
            if (System.nanoTime() - deadline >= 0) {
                long holder = lockHolder(dir.resolve(LOCK_FILE));
                throw lockTimeout(key, holder > 0 ? "process " + holder + " holds it" : "another process holds it");
            }
            LockSupport.parkNanos(Math.min(pause, Math.max(1, deadline - System.nanoTime())));
            pause = Math.min(pause * 2, 1_000_000); // holders keep it for microseconds: a waiter that slept long would lose every race
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                throw lockInterrupted(key);
            }
        }
    }

    private TransportException lockInterrupted(String key) {
        return new TransportException(-1, "interrupted waiting for the lock of file store " + dir + " to add '" + key + "'");
    }

    private TransportTimeoutException lockTimeout(String key, String why) {
        return new TransportTimeoutException(-1, "add '" + key + "' did not get the lock " + dir.resolve(LOCK_FILE)
                + " within " + TimeUnit.NANOSECONDS.toMillis(lockTimeoutNanos) + " ms: " + why);
    }

    /**
     * The pid that holds a POSIX lock on {@code file}, from {@code /proc/locks} (whose lines name
     * the locked file as {@code major:minor:inode}, the device numbers in hex); 0 where it cannot tell.
     */
    static long lockHolder(Path file) {
        try {
            long inode = ((Number) Files.getAttribute(file, "unix:ino")).longValue();
            long dev = ((Number) Files.getAttribute(file, "unix:dev")).longValue();
            // glibc's encoding of dev_t
            long major = ((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL);
            long minor = (dev & 0xff) | ((dev >>> 12) & ~0xffL);
            String where = String.format("%02x:%02x:%d", major, minor, inode);
            for (String line : Files.readAllLines(Path.of("/proc/locks"))) {
                String[] f = line.trim().split("\\s+");
                // "1: POSIX  ADVISORY  WRITE 4242 00:2d:1234 0 EOF"; blocked waiters' lines start with "->"
                if (f.length >= 6 && f[1].equals("POSIX") && f[5].equals(where)) {
                    return Long.parseLong(f[4]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // no /proc, no unix view, or a line of another shape: the message goes without a pid
        }
        return 0;
    }

    @Override
    public boolean delete(String key) {
        try {
            return Files.deleteIfExists(file(key));
        } catch (IOException e) {
            throw new TransportException(-1, "file store " + dir + " failed delete '" + key + "': " + e, e);
        }
    }

    /** Nothing to release; the directory and its keys stay for the other ranks. */
    @Override
    public void close() {
    }

    @Override
    public String toString() {
        return "FileStore[" + dir + "]";
    }
}
