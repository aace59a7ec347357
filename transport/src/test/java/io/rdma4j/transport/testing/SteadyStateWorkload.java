package io.rdma4j.transport.testing;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.RemoteBuffer;
import io.rdma4j.transport.Transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The operation mix of the steady-state allocation tests, one provider or another: send/recv of
 * a small and a large payload, a write with immediate from a user segment found in the
 * registration cache, and a read, all checked. Both ranks are driven from the calling thread, so
 * every byte the transports allocate on the operation path is counted.
 */
public final class SteadyStateWorkload {
    private SteadyStateWorkload() {
    }

    /**
     * Why the TCP provider's steady state cannot be allocation-free on this JVM, or null when it
     * can: the JDK's epoll selector looks each ready key up by its file descriptor boxed as an
     * Integer, 16 B per ready key once descriptors pass 127 (a JVM with many jars open, as
     * scripts/softroce-test's), which C2's escape analysis removes and C1 does not.
     */
    public static String selectorAllocates() {
        return System.getProperty("java.vm.info", "").contains("emulated-client")
                ? "a JVM without C2 (-XX:TieredStopAtLevel=1) keeps the JDK selector's boxed file descriptors"
                : null;
    }

    /** Whether this JVM can count the bytes a thread allocates. */
    public static boolean measurable() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        return threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled();
    }

    /**
     * Runs {@code warm} iterations, then {@code measured} more, and asserts that the measured
     * ones allocated less than 1 KiB on this thread.
     */
    public static void assertAllocatesNothing(Transport t0, Transport t1, Connection c0, Connection c1, Arena arena,
                                              int warm, int measured) {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        RegisteredBuffer a = t0.allocate(1 << 20);
        RegisteredBuffer b = t1.allocate(1 << 20);
        MemorySegment user = arena.allocate(4096);
        RemoteBuffer remoteB = b.remote();
        for (int i = 0; i < warm; i++) {
            iteration(t0, t1, c0, c1, a, b, remoteB, user, i);
        }
        long before = threads.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < measured; i++) {
            iteration(t0, t1, c0, c1, a, b, remoteB, user, i);
        }
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertTrue(allocated < 1024, allocated + " bytes allocated in " + measured + " steady-state iterations ("
                + (double) allocated / measured + " B/iteration)");
    }

    private static void iteration(Transport t0, Transport t1, Connection c0, Connection c1, RegisteredBuffer a,
                                  RegisteredBuffer b, RemoteBuffer remoteB, MemorySegment user, int i) {
        RegisteredBuffer u = t0.register(user); // cached: no allocation
        // small and large payloads: tcp copies the small one and writes the large one from memory;
        // verbs sends the small one in one part and stripes the large one over its QPs
        long length = i % 2 == 0 ? 100 : 40_000;
        a.segment().set(ValueLayout.JAVA_INT, 0, i);
        long r = c1.irecv(b, 0, 40_000, 3);
        long s = c0.isend(a, 0, length, 3);
        long sent = Transport.PENDING;
        long received = Transport.PENDING;
        while (sent == Transport.PENDING || received == Transport.PENDING) {
            if (sent == Transport.PENDING) {
                sent = t0.test(s);
            }
            if (received == Transport.PENDING) {
                received = t1.test(r);
            }
        }
        assertEquals(length, received);
        assertEquals(i, b.segment().get(ValueLayout.JAVA_INT, 0));
        long w = c0.write(u, 0, remoteB, 1000, 4096, i & 0xFFFF);
        long rd = c0.read(a, 8192, remoteB, 0, 70_000);
        long written = Transport.PENDING;
        long read = Transport.PENDING;
        long immediate = Connection.NO_IMMEDIATE;
        while (written == Transport.PENDING || read == Transport.PENDING || immediate == Connection.NO_IMMEDIATE) {
            if (written == Transport.PENDING) {
                written = t0.test(w);
            }
            if (read == Transport.PENDING) {
                read = t0.test(rd);
            }
            long polled = c1.pollImmediate(); // also progresses rank 1: serves the read (tcp), returns credits (verbs)
            if (polled != Connection.NO_IMMEDIATE) {
                immediate = polled;
            }
        }
        assertEquals(i & 0xFFFF, immediate);
        assertEquals(70_000, read);
    }
}
