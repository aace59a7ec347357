package io.rdma4j.transport.shm;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** A killed process that its parent has not reaped yet is a zombie: exited, though ProcessHandle calls it alive. */
class ProcessStateTest {

    @Test
    void aZombieHasExited() throws Exception {
        assumeTrue(Files.isDirectory(Path.of("/proc/self")));
        // the shell's child keeps running under "exec sleep", which never reaps it
        Process parent = new ProcessBuilder("sh", "-c", "sleep 60 & exec sleep 60").start();
        try {
            ProcessHandle child = null;
            for (int i = 0; i < 500 && child == null; i++) {
                child = parent.toHandle().children().findFirst().orElse(null);
                Thread.sleep(10);
            }
            assertTrue(child != null, "the shell started no child");
            try (ProcessState state = new ProcessState(child)) {
                assertFalse(state.exited(), "a running process");
                child.destroyForcibly();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (!state.exited() && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                assertTrue(child.isAlive(), "ProcessHandle still calls the zombie alive");
                assertTrue(state.exited(), "the zombie has exited");
                assertTrue(ProcessState.exited(child));
            }
        } finally {
            parent.destroyForcibly();
        }
    }

    @Test
    void theStateLetterFollowsTheCommandNameEvenWithParenthesesInIt() {
        assertTrue(ProcessState.exited(text("4242 (a) b) Z 1 4242"), 20));
        assertFalse(ProcessState.exited(text("4242 (a) b) S 1 4242"), 20));
        assertFalse(ProcessState.exited(text("4242 (java) R 1 4242"), 19));
    }

    private static ByteBuffer text(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.US_ASCII));
    }
}
