package io.rdma4j.transport.tcp;

import io.rdma4j.nativesupport.internal.LibC;

import java.io.File;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.channels.SocketChannel;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * The file descriptor behind a connected {@link SocketChannel}, for the socket options NIO does
 * not offer. NIO keeps it to the JDK's internals, so it is found the way a tool would find it:
 * among this process's open descriptors ({@code /proc/self/fd}), the socket whose own and peer
 * addresses are the channel's. That pair names one socket in a process: the two ends of a
 * connection within one process have it in opposite order.
 */
final class SocketDescriptor {
    /** What {@link #of} returns when it finds none. */
    static final int NONE = -1;
    private static final int AF_INET = 2;
    private static final int AF_INET6 = 10;
    /** sizeof(struct sockaddr_storage). */
    private static final int SOCKADDR_BYTES = 128;

    private SocketDescriptor() {
    }

    /** The channel's descriptor, or {@link #NONE} (not connected, no /proc, no socket calls in libc). */
    static int of(SocketChannel channel) throws IOException {
        if (!(channel.getLocalAddress() instanceof InetSocketAddress local)
                || !(channel.getRemoteAddress() instanceof InetSocketAddress remote) || !LibC.hasSocketCalls()) {
            return NONE;
        }
        String[] names = new File("/proc/self/fd").list();
        if (names == null) {
            return NONE;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment address = arena.allocate(SOCKADDR_BYTES);
            for (String name : names) {
                int fd = descriptor(name);
                if (fd >= 0 && local.equals(decode(address, LibC.getsockname(fd, address)))
                        && remote.equals(decode(address, LibC.getpeername(fd, address)))) {
                    return fd;
                }
            }
        }
        return NONE;
    }

    private static int descriptor(String name) {
        try {
            return Integer.parseInt(name);
        } catch (NumberFormatException e) {
            return NONE;
        }
    }

    /**
     * A struct sockaddr_in or sockaddr_in6 of {@code length} bytes (a negative length: the call
     * failed) as an address, or null for any other. An IPv4-mapped IPv6 address decodes as the
     * IPv4 address, as Java reports a dual-stack socket's addresses.
     */
    static InetSocketAddress decode(MemorySegment address, int length) {
        if (length < 4) {
            return null;
        }
        int family = address.get(JAVA_SHORT, 0); // native order, as the kernel writes it
        int port = (address.get(JAVA_BYTE, 2) & 0xff) << 8 | address.get(JAVA_BYTE, 3) & 0xff; // network order
        byte[] ip;
        if (family == AF_INET && length >= 8) {
            ip = address.asSlice(4, 4).toArray(JAVA_BYTE);
        } else if (family == AF_INET6 && length >= 24) {
            ip = address.asSlice(8, 16).toArray(JAVA_BYTE);
        } else {
            return null;
        }
        try {
            return new InetSocketAddress(InetAddress.getByAddress(ip), port);
        } catch (UnknownHostException e) {
            throw new AssertionError("a 4- or 16-byte address is valid", e);
        }
    }
}
