package io.rdma4j.transport.shm;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.TransportException;
import io.rdma4j.verbs.testing.SoftRoce;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.rdma4j.transport.shm.ShmTestGroup.TIMEOUT_NANOS;
import static io.rdma4j.transport.shm.ShmTestGroup.check;
import static io.rdma4j.transport.shm.ShmTestGroup.fill;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The shm provider between separate JVMs: this JVM is rank 0, {@link ShmPeerProcess} rank 1. */
class ShmMultiProcessTest {
    private final ShmTestGroup group = new ShmTestGroup();
    private final List<Process> children = new ArrayList<>();

    @AfterEach
    void cleanUp() throws InterruptedException {
        for (Process p : children) {
            p.destroyForcibly().waitFor();
        }
        group.close();
    }

    @Test
    void dataCrossesProcessesIntactInBothDirections() throws Exception {
        Process child = start("echo");
        long max = ShmTransportTest.SIZES[ShmTransportTest.SIZES.length - 1];
        try (ShmTransport t = group.transport(0, 2); Arena arena = Arena.ofConfined()) {
            Connection c = t.connection(1);
            RegisteredBuffer src = t.register(arena.allocate(max, 64));
            RegisteredBuffer back = t.allocate(max);
            for (int i = 0; i < ShmTransportTest.SIZES.length; i++) {
                long size = ShmTransportTest.SIZES[i];
                fill(src.segment(), 0, size, i);
                for (int path = 0; path < 2; path++) { // the child receives into shared, then private memory
                    back.segment().fill((byte) 0);
                    long echo = c.irecv(back, 0, size, i);
                    assertEquals(size, t.await(c.isend(src, 0, size, i), TIMEOUT_NANOS));
                    assertEquals(size, t.await(echo, TIMEOUT_NANOS), "echo of " + size);
                    assertEquals(-1, check(back.segment(), 0, size, i), "echo of " + size + " differs");
                }
            }
            long size = (1 << 20) + 3;
            group.store.set("parent-target", back.remote().toBytes());
            RemoteBuffer target = RemoteBuffer.fromBytes(group.store.get("child-target", Duration.ofSeconds(60)));
            fill(src.segment(), 0, size, 77);
            assertEquals(size, t.await(c.write(src, 0, target, 0, size, 77), TIMEOUT_NANOS));
            assertEquals(78, ShmTransportTest.waitImmediate(c));
            assertEquals(-1, check(back.segment(), 0, size, 77), "written back by the child");
            assertEquals(0, t.await(c.isend(src, 0, 0, 999), TIMEOUT_NANOS));
            assertEquals(0, exit(child), output(child));
        }
        assertEquals(List.of(), group.leftovers(), "files left after both ranks closed");
    }

    @Test
    void killedPeerFailsEveryPendingRequestQuicklyAndItsFilesAreRemoved() throws Exception {
        Process child = start("hang");
        // The configured timeout is long: the failure must come from liveness, not from it.
        try (ShmTransport t = new ShmTransport(group.config(Duration.ofSeconds(120)), group.store, 0, 2)) {
            Connection c = t.connection(1);
            long childPid = Long.parseLong(new String(group.store.get("child-ready", Duration.ofSeconds(60))));
            assertEquals(child.pid(), childPid);
            RegisteredBuffer buf = t.allocate(16L << 20);
            long stuckSend = c.isend(buf, 0, 8L << 20, 1);   // bounce: stalls after the first chunks
            long noSender = c.irecv(buf, 0, 64, 2);           // the child never sends
            long noReceiver = c.isend(buf, 0, 64, 3);         // the child never receives
            for (int i = 0; i < 20; i++) {
                assertEquals(-1, t.test(stuckSend));
                Thread.sleep(5);
            }
            assertFalse(peerFiles(childPid).isEmpty(), "the child's files exist while it lives");

            child.destroyForcibly();
            assertTrue(child.waitFor(30, TimeUnit.SECONDS));
            long start = System.nanoTime();
            for (long id : new long[] {stuckSend, noSender, noReceiver}) {
                TransportException e = assertThrows(TransportException.class, () -> t.await(id, TIMEOUT_NANOS));
                assertEquals(1, e.peer());
                assertTrue(e.getMessage().contains("peer 1 (pid " + childPid + ") died"), e.getMessage());
            }
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10), "detected within seconds");
            TransportException later = assertThrows(TransportException.class, () -> c.isend(buf, 0, 1, 4));
            assertEquals(1, later.peer());
            assertThrows(TransportException.class, c::pollImmediate);
            assertEquals(List.of(), peerFiles(childPid), "the survivor removed the dead rank's files");
        }
        assertEquals(List.of(), group.leftovers());
    }

    @Test
    void filesOfAKilledRankNobodyWatchedAreRemovedByTheNextTransport() throws Exception {
        Process child = start("orphan");
        String control = new String(group.store.get("orphan-ready", Duration.ofSeconds(60)));
        assertTrue(Files.exists(group.shmDir.resolve(control)));
        assertEquals(3, peerFiles(child.pid()).size(), "control file and two slabs: " + group.leftovers());
        child.destroyForcibly();
        assertTrue(child.waitFor(30, TimeUnit.SECONDS));
        assertEquals(3, peerFiles(child.pid()).size(), "a SIGKILLed JVM cannot clean up");
        try (ShmTransport t = group.transport(0, 1)) {
            assertEquals(List.of(), peerFiles(child.pid()));
            assertTrue(Files.exists(t.controlFile()));
        }
        assertEquals(List.of(), group.leftovers());
    }

    // ---------------------------------------------------------------- helpers

    private List<String> peerFiles(long pid) {
        return group.leftovers().stream().filter(f -> f.contains("-p" + pid + "-")).toList();
    }

    private Process start(String scenario) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path log = Files.createTempFile(group.storeDir, "child-", ".log");
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC", "-Xmx256m"));
        cmd.addAll(SoftRoce.childJvmOptions()); // in the Soft-RoCE guest: C1 only, as the test JVM
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), ShmPeerProcess.class.getName(),
                scenario, group.shmDir.toString(), group.storeDir.toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        children.add(p);
        logs.add(log);
        return p;
    }

    private final List<Path> logs = new ArrayList<>();

    private int exit(Process p) throws InterruptedException {
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "child did not exit");
        return p.exitValue();
    }

    private String output(Process p) throws IOException {
        return "child output:\n" + Files.readString(logs.get(children.indexOf(p)));
    }
}
