package io.rdma4j.transport.shm;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Names of one rank's shared files and the cleanup rule for files whose process is gone.
 *
 * <p>Every file is named {@code rdma4j-<job>-n<pidns>-r<rank>-p<pid>-<kind>} with kind {@code ctl}
 * (the control file) or {@code heap<N>} (a slab of remotely accessible buffers), and {@code pidns}
 * the inode of the creating process's pid namespace ({@code /proc/self/ns/pid}; 0 where it cannot
 * be read). Cleanup rule:
 * <ol>
 *   <li>a transport unlinks its own files in {@code close()} (and from a shutdown hook when the
 *       JVM exits without closing it);</li>
 *   <li>a rank that sees a peer die unlinks the peer's files;</li>
 *   <li>every transport, when it starts, unlinks any such file of its own pid namespace in its
 *       directory whose pid is not a live process, or is a live process that started after the
 *       file was last written (the pid was reused);</li>
 *   <li>and the files of a rank of another pid namespace whose control file's owner said that it
 *       holds its {@link ControlLock} and no longer holds it.</li>
 * </ol>
 * So a crashed job leaves nothing behind once any of its ranks survives to notice, or at the
 * latest when the next job starts on this directory. The namespace is in the name because
 * containers can share one /dev/shm ({@code docker run --ipc=host}, or a pod's memory volume
 * that outlives a container killed for its memory and restarted in a new pid namespace) while
 * each sees only its own processes: a pid is only meaningful in the namespace that gave it, and a
 * container that judged another container's files by its own pids would unlink files that a live
 * job still opens. Across namespaces the lock tells instead, which the kernel drops when the
 * owner dies.
 */
final class ShmFiles {
    /** Groups: the rank's prefix (only characters {@link #prefix} writes: no glob), its pid namespace, its pid, the kind of file. */
    private static final Pattern OWNED = Pattern.compile("(rdma4j-[A-Za-z0-9_.]+-n(\\d+)-r\\d+-p(\\d+))-(ctl|heap\\d+)");
    /** This process's pid namespace (the inode of {@code /proc/self/ns/pid}), 0 if unknown. */
    static final long PID_NAMESPACE = readPidNamespace();
    private static final long PID_REUSE_SLACK_MILLIS = 60_000; // start times derive from boot time + jiffies: allow clock skew

    private final Path dir;
    private final String prefix;

    ShmFiles(Path dir, String prefix) {
        this.dir = dir;
        this.prefix = prefix;
    }

    static String prefix(String job, int rank, long pid) {
        return "rdma4j-" + sanitize(job) + "-n" + PID_NAMESPACE + "-r" + rank + "-p" + pid;
    }

    private static long readPidNamespace() {
        try {
            // "pid:[4026531836]"
            String link = Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString();
            return Long.parseLong(link.replaceAll("\\D", ""));
        } catch (IOException | UnsupportedOperationException | NumberFormatException e) {
            return 0;
        }
    }

    Path dir() {
        return dir;
    }

    String prefix() {
        return prefix;
    }

    Path control() {
        return dir.resolve(prefix + "-ctl");
    }

    String slabName(int slab) {
        return prefix + "-heap" + slab;
    }

    Path slab(int slab) {
        return dir.resolve(slabName(slab));
    }

    /** Unlinks every file of this rank (the control file and all slabs). Returns how many. */
    int deleteAll() {
        int deleted = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, prefix + "-*")) {
            for (Path f : files) {
                if (MappedFile.deleteQuietly(f)) {
                    deleted++;
                }
            }
        } catch (IOException e) {
            // The directory itself is gone or unreadable: nothing of ours is left to delete.
        }
        return deleted;
    }

    /**
     * Unlinks the files in {@code dir} left by processes of this pid namespace that no longer
     * exist (rule 3), and those of a rank of another namespace whose lock is free (rule 4).
     */
    static int reapStale(Path dir) {
        int deleted = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "rdma4j-*")) {
            for (Path f : files) {
                Matcher m = OWNED.matcher(f.getFileName().toString());
                try {
                    if (!m.matches()) {
                        continue;
                    }
                    if (Long.parseLong(m.group(2)) == PID_NAMESPACE) {
                        if (isStale(f, Long.parseLong(m.group(3))) && MappedFile.deleteQuietly(f)) {
                            deleted++;
                        }
                    } else if (m.group(4).equals("ctl") && ownerIsGone(f)) {
                        deleted += new ShmFiles(dir, m.group(1)).deleteAll();
                    }
                } catch (IOException | NumberFormatException e) {
                    // this file only (e.g. deleted by its owner since the listing): the others are still looked at
                }
            }
        } catch (IOException | java.nio.file.DirectoryIteratorException e) {
            // Best effort: an unreadable directory fails loudly later, when our own file is created.
        }
        return deleted;
    }

    /** Rule 4: the control file's owner holds its lock for its life (its header says so), and it is free. */
    private static boolean ownerIsGone(Path control) throws IOException {
        byte[] head;
        try (InputStream in = Files.newInputStream(control)) {
            head = in.readNBytes(ShmLayout.LOCK_HEADER_BYTES);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment header = arena.allocate(head.length, 8); // aligned, as the header's fields are
            MemorySegment.copy(MemorySegment.ofArray(head), 0, header, 0, head.length);
            return ShmLayout.ownerLocked(header) && ControlLock.ownerIsGone(control);
        }
    }

    private static boolean isStale(Path file, long pid) throws IOException {
        Optional<ProcessHandle> process = ProcessHandle.of(pid);
        if (process.isEmpty() || ProcessState.exited(process.get())) {
            return true;
        }
        Optional<Instant> started = process.get().info().startInstant();
        long written = Files.getLastModifiedTime(file).toMillis();
        return started.isPresent() && started.get().toEpochMilli() > written + PID_REUSE_SLACK_MILLIS;
    }

    private static String sanitize(String job) {
        String s = job == null || job.isEmpty() ? "job" : job.replaceAll("[^A-Za-z0-9_.]", "_");
        return s.length() > 64 ? s.substring(0, 64) : s;
    }
}
