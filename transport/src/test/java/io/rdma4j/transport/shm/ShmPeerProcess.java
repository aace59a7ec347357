package io.rdma4j.transport.shm;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.FileStore;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static io.rdma4j.transport.shm.ShmTestGroup.TIMEOUT_NANOS;
import static io.rdma4j.transport.shm.ShmTestGroup.check;
import static io.rdma4j.transport.shm.ShmTestGroup.fill;

/**
 * Rank 1 of a two-rank job, run in its own JVM by {@link ShmMultiProcessTest}:
 * {@code ShmPeerProcess <scenario> <shmDir> <storeDir>}. Exit status 0 means every check passed;
 * any failure is printed and exits with 1.
 */
public final class ShmPeerProcess {
    static final Duration WAIT = Duration.ofSeconds(60);

    public static void main(String[] args) throws Exception {
        try {
            String scenario = args[0];
            TransportConfig config = TransportConfig.builder().provider(TransportConfig.Provider.SHM)
                    .shmDir(Path.of(args[1])).timeout(WAIT).maxOutstandingRequests(256).build();
            FileStore store = new FileStore(Path.of(args[2]));
            switch (scenario) {
                case "echo" -> echo(new ShmTransport(config, store, 1, 2), store);
                case "hang" -> hang(new ShmTransport(config, store, 1, 2), store);
                case "orphan" -> orphan(new ShmTransport(config, store, 0, 1), store);
                default -> throw new IllegalArgumentException("unknown scenario " + scenario);
            }
            System.exit(0);
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
    }

    /** Receives every size on both paths, checks it and sends it back; then the one-sided part. */
    private static void echo(ShmTransport t, FileStore store) {
        long max = ShmTransportTest.SIZES[ShmTransportTest.SIZES.length - 1];
        try (t; Arena arena = Arena.ofConfined()) {
            Connection c = t.connection(0);
            RegisteredBuffer shared = t.allocate(max);
            RegisteredBuffer priv = t.register(arena.allocate(max, 64));
            for (int i = 0; i < ShmTransportTest.SIZES.length; i++) {
                long size = ShmTransportTest.SIZES[i];
                for (RegisteredBuffer dst : List.of(shared, priv)) {
                    long got = t.await(c.irecv(dst, 0, size, i), TIMEOUT_NANOS);
                    require(got == size, "received " + got + " bytes, expected " + size);
                    long bad = check(dst.segment(), 0, size, i);
                    require(bad == -1, "size " + size + " (shared=" + (dst == shared) + ") differs at byte " + bad);
                    require(t.await(c.isend(dst, 0, size, i), TIMEOUT_NANOS) == size, "echo of " + size);
                }
            }
            // One-sided: the parent writes into our buffer with an immediate; we write it back
            // into the parent's buffer with immediate + 1.
            store.set("child-target", shared.remote().toBytes());
            RemoteBuffer parent = RemoteBuffer.fromBytes(store.get("parent-target", WAIT));
            long imm = ShmTransportTest.waitImmediate(c);
            require(imm == 77, "immediate " + imm);
            long size = (1 << 20) + 3;
            require(check(shared.segment(), 0, size, 77) == -1, "one-sided data");
            require(t.await(c.write(shared, 0, parent, 0, size, imm + 1), TIMEOUT_NANOS) == size, "write back");
            // Wait for the parent's final message so we do not close while it still reads us.
            require(t.await(c.irecv(shared, 0, 0, 999), TIMEOUT_NANOS) == 0, "final message");
        }
    }

    /**
     * Connects, posts a receive the parent will stream into through the bounce buffer without
     * ever progressing it (so the parent's send is stuck mid-message), says so, then waits to be
     * killed.
     */
    private static void hang(ShmTransport t, FileStore store) throws InterruptedException {
        Connection c = t.connection(0);
        RegisteredBuffer priv = t.register(Arena.global().allocate(8L << 20));
        c.irecv(priv, 0, 8L << 20, 1);
        store.set("child-ready", Long.toString(ProcessHandle.current().pid()).getBytes());
        Thread.sleep(WAIT.toMillis());
        throw new IllegalStateException("was not killed");
    }

    /** Creates files no surviving rank will ever see, then waits to be killed. */
    private static void orphan(ShmTransport t, FileStore store) throws InterruptedException, IOException {
        List<RegisteredBuffer> keep = new ArrayList<>();
        keep.add(t.allocate(1 << 20));
        keep.add(t.allocate(100L << 20));
        store.set("orphan-ready", t.controlFile().getFileName().toString().getBytes());
        Thread.sleep(WAIT.toMillis());
        throw new IllegalStateException("was not killed, holding " + keep.size() + " buffers");
    }

    private static void require(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }
}
