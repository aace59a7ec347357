package io.rdma4j.transport.shm;

import io.rdma4j.transport.internal.Closing;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * Whether a process has exited, including a zombie: a process killed but not yet reaped by its
 * parent (a launcher that waits on its children one by one) is alive for
 * {@link ProcessHandle#isAlive()}, and would be waited for until a timeout. Its state letter in
 * {@code /proc/<pid>/stat}, after the command name in parentheses, is then Z (or X).
 */
final class ProcessState implements AutoCloseable {
    private final ProcessHandle process;
    private final Path stat;
    private final ByteBuffer text = ByteBuffer.allocate(1024);
    private FileChannel channel;

    ProcessState(ProcessHandle process) {
        this.process = process;
        this.stat = Path.of("/proc", Long.toString(process.pid()), "stat");
    }

    /** Allocation-free once the file is open (it stays open: /proc rewrites it at every read from 0). */
    boolean exited() {
        if (!process.isAlive()) {
            return true;
        }
        try {
            if (channel == null) {
                channel = FileChannel.open(stat);
            }
            text.clear();
            int n = channel.read(text, 0);
            return exited(text, n);
        } catch (IOException gone) {
            return !stat.toFile().exists(); // no /proc at all: ProcessHandle's answer stands
        }
    }

    /** One look, for a process seen once. */
    static boolean exited(ProcessHandle process) {
        try (ProcessState s = new ProcessState(process)) {
            return s.exited();
        }
    }

    /** Whether {@code /proc/<pid>/stat}'s first {@code n} bytes in {@code text} give the state Z or X. */
    static boolean exited(ByteBuffer text, int n) {
        for (int i = n - 1; i >= 0; i--) {
            if (text.get(i) == ')') {
                byte state = i + 2 < n ? text.get(i + 2) : 0;
                return state == 'Z' || state == 'X';
            }
        }
        return false;
    }

    @Override
    public void close() {
        if (channel != null) {
            Closing.quietly(channel);
            channel = null;
        }
    }
}
