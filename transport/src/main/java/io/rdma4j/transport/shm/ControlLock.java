package io.rdma4j.transport.shm;

import io.rdma4j.nativesupport.internal.LibC;

import java.nio.file.Path;

/**
 * The lock by which a live transport's control file says that its process is alive, to
 * processes of another pid namespace, which cannot look the owner's pid up. The owner holds a
 * shared flock(2) on the file for its life, on a descriptor of its own; the kernel drops it when
 * the process dies, however it dies. A process that can take the file's exclusive lock therefore
 * knows the owner is gone. flock, not fcntl's record locks (Java's {@code FileChannel.lock}):
 * a record lock belongs to the whole process and goes away when any descriptor of that file in
 * it is closed, which a peer rank in the same JVM does each time it maps the file. (Where flock
 * itself is emulated with record locks, as on NFS, the lock says nothing; the shm directory is
 * meant to be a local tmpfs, /dev/shm by default.)
 */
final class ControlLock implements AutoCloseable {
    private static final int O_RDONLY = 0;
    private static final int O_CLOEXEC = 0x80000; // Linux
    private static final int LOCK_SH = 1;
    private static final int LOCK_EX = 2;
    private static final int LOCK_NB = 4;
    private static final boolean AVAILABLE = "Linux".equals(System.getProperty("os.name")) && LibC.hasFlock();

    private int fd;

    private ControlLock(int fd) {
        this.fd = fd;
    }

    /**
     * Takes the shared lock on this process's own control file, held until {@link #close}; where
     * the platform has no flock, or the file cannot be opened, a lock that holds nothing (the file
     * is then only ever judged by its pid, in its own namespace).
     */
    static ControlLock hold(Path control) {
        return new ControlLock(lock(control, LOCK_SH));
    }

    /**
     * Whether the owner of {@code control} has certainly died: this process could take the
     * file's exclusive lock (and let it go at once). False where that cannot be told: the lock is
     * held, the file cannot be opened (another user's, or gone), or the platform has no flock.
     */
    static boolean ownerIsGone(Path control) {
        int fd = lock(control, LOCK_EX);
        if (fd < 0) {
            return false;
        }
        LibC.close(fd); // lets go of the lock at once
        return true;
    }

    /**
     * A new descriptor of {@code control} holding its flock of the {@code kind} given, taken
     * without waiting; -1 when the lock is held elsewhere, the file cannot be opened, or the
     * platform has no flock.
     */
    private static int lock(Path control, int kind) {
        if (!AVAILABLE) {
            return -1;
        }
        int fd = LibC.open(control.toString(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && LibC.flock(fd, kind | LOCK_NB) != 0) {
            LibC.close(fd);
            return -1;
        }
        return fd;
    }

    /** Whether {@link #hold} took the lock. */
    synchronized boolean held() {
        return fd >= 0;
    }

    /** Lets go of the lock (once: the descriptor's number may be another file's afterwards); the owner calls it once its files are unlinked. */
    @Override
    public synchronized void close() {
        if (fd >= 0) {
            LibC.close(fd);
            fd = -1;
        }
    }
}
