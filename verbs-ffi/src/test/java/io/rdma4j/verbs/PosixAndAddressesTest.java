package io.rdma4j.verbs;

import io.rdma4j.nativesupport.internal.LibC;
import io.rdma4j.verbs.ffi.sockaddr_in6;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Inet6Address;
import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The bounded waits of the event channels and the addresses handed to rdma_cm, without a device. */
class PosixAndAddressesTest {
    private static final long SYS_WRITE = 1;
    private static final long SYS_EVENTFD2 = 290;

    @Test
    void aWaitForeverWaitsAndATimeoutNamesTheTimeAskedFor() throws Exception {
        assumeTrue(LibC.hasSyscall() && "amd64".equals(System.getProperty("os.arch")), "x86-64 syscall numbers");
        int fd = (int) LibC.syscall(SYS_EVENTFD2, 0, 0, 0, 0, 0); // readable once written to
        assertTrue(fd >= 0, "eventfd2: " + fd);
        try (Arena arena = Arena.ofConfined()) {
            VerbsTimeoutException e = assertThrows(VerbsTimeoutException.class,
                    () -> Posix.awaitReadable(fd, System.nanoTime(), 200, "an event"));
            assertEquals("timed out after 200 ms waiting for an event", e.getMessage());
            assertThrows(VerbsTimeoutException.class, () -> Posix.awaitReadable(fd, System.nanoTime(), -5, "none"));

            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread waiter = Thread.ofPlatform().daemon().start(() -> {
                try {
                    Posix.awaitReadable(fd, System.nanoTime(), Long.MAX_VALUE, "an event, however long");
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            Thread.sleep(300);
            assertTrue(waiter.isAlive(), "a wait of Long.MAX_VALUE ms ended early: " + failure.get());
            MemorySegment one = arena.allocate(ValueLayout.JAVA_LONG);
            one.set(ValueLayout.JAVA_LONG, 0, 1);
            assertEquals(8, LibC.syscall(SYS_WRITE, fd, one.address(), 8, 0, 0));
            waiter.join(5_000);
            assertFalse(waiter.isAlive(), "the wait did not end when the fd became readable");
            assertNull(failure.get());
        } finally {
            LibC.close(fd);
        }
    }

    /** A sliced wait runs its check before each poll of at most the slice; the check's throw ends it. */
    @Test
    void aSlicedWaitChecksBeforeEachPollAndEndsWhenTheCheckThrows() throws Exception {
        assumeTrue(LibC.hasSyscall() && "amd64".equals(System.getProperty("os.arch")), "x86-64 syscall numbers");
        int fd = (int) LibC.syscall(SYS_EVENTFD2, 0, 0, 0, 0, 0);
        assertTrue(fd >= 0, "eventfd2: " + fd);
        try {
            int[] checks = {0};
            long start = System.nanoTime();
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> Posix.awaitReadable(fd, System.nanoTime(), 60_000, "an event", 50, () -> {
                        if (++checks[0] == 4) {
                            throw new IllegalStateException("closed");
                        }
                    }));
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertEquals("closed", e.getMessage());
            assertEquals(4, checks[0]);
            assertTrue(ms >= 140 && ms < 5_000, "three 50 ms polls took " + ms + " ms");
            VerbsTimeoutException timeout = assertThrows(VerbsTimeoutException.class,
                    () -> Posix.awaitReadable(fd, System.nanoTime(), 120, "an event", 50, () -> { }));
            assertEquals("timed out after 120 ms waiting for an event", timeout.getMessage());
        } finally {
            LibC.close(fd);
        }
    }

    @Test
    void aLinkLocalIpv6AddressKeepsItsInterface() throws Exception {
        byte[] fe80 = new byte[16];
        fe80[0] = (byte) 0xfe;
        fe80[1] = (byte) 0x80;
        fe80[15] = 1;
        InetSocketAddress address = new InetSocketAddress(Inet6Address.getByAddress(null, fe80, 3), 7471);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment sa = SocketAddresses.toNative(address, arena);
            assertEquals(3, sockaddr_in6.sin6_scope_id(sa));
            assertEquals(7471, Short.toUnsignedInt(Short.reverseBytes(sockaddr_in6.sin6_port(sa))));
        }
    }
}
