package io.rdma4j.transport.tcp;

import io.rdma4j.nativesupport.internal.LibC;
import io.rdma4j.transport.TransportConfig;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

/**
 * The TCP congestion control of a connection ({@link TransportConfig#tcpCongestion()}). By
 * default a connection between two ranks of one host takes Reno, and any other keeps the host's
 * default: congestion control guards a network, and between ranks of one host there is none,
 * only the two CPUs' copies. A model-based algorithm such as BBR (the default on this project's
 * build hosts) paces and probes there as if there were a path to model: two processes exchanging
 * S bytes both ways over loopback ({@code benchmarks/c/tcp_exchange -C bbr} against {@code -C
 * reno}, 2 cores, kernel 6.18) took 376 us against 184 at 1 MiB, 760 against 385 at 2 MiB and
 * 1531 against 778 at 4 MiB, and under BBR the connection retransmitted segments it had not lost
 * (nstat: TcpRetransSegs, TcpExtTCPDSACKRecv), under Reno none. Re-measure the same way on the
 * host in question. Reno is built into every Linux kernel and every user may choose it
 * (net.ipv4.tcp_allowed_congestion_control).
 */
final class CongestionControl {
    /** The algorithm {@link TransportConfig#TCP_CONGESTION_AUTO} gives connections within a host. */
    static final String WITHIN_HOST = "reno";
    private static final int IPPROTO_TCP = 6;
    private static final int TCP_CONGESTION = 13;
    /** TCP_CA_NAME_MAX. */
    private static final int NAME_BYTES = 16;

    private CongestionControl() {
    }

    /**
     * The algorithm {@code setting} gives a connection from {@code local} to {@code remote}, or
     * null to leave the host's default.
     */
    static String choose(String setting, InetAddress local, InetAddress remote) {
        return switch (setting) {
            case TransportConfig.TCP_CONGESTION_SYSTEM -> null;
            case TransportConfig.TCP_CONGESTION_AUTO -> remote.isLoopbackAddress() || remote.equals(local) ? WITHIN_HOST : null;
            default -> setting;
        };
    }

    /**
     * Sets what {@code setting} chooses for the connection; returns null when that is done or
     * nothing was to be done, else why it could not be (the connection works either way).
     */
    static String apply(SocketChannel channel, String setting) throws IOException {
        InetSocketAddress local = (InetSocketAddress) channel.getLocalAddress();
        InetSocketAddress remote = (InetSocketAddress) channel.getRemoteAddress();
        String algorithm = choose(setting, local.getAddress(), remote.getAddress());
        if (algorithm == null) {
            return null;
        }
        int fd = SocketDescriptor.of(channel);
        if (fd == SocketDescriptor.NONE) {
            return "its socket's descriptor was not found";
        }
        try (Arena arena = Arena.ofConfined()) {
            int rc = LibC.setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, arena.allocateFrom(algorithm, StandardCharsets.US_ASCII)
                    .asSlice(0, algorithm.length()));
            return rc == 0 ? null : "setsockopt(TCP_CONGESTION, " + algorithm + ") failed with errno " + -rc;
        }
    }

    /** The connection's congestion control as the kernel reports it, or null where it cannot be asked. */
    static String current(SocketChannel channel) throws IOException {
        int fd = SocketDescriptor.of(channel);
        if (fd == SocketDescriptor.NONE) {
            return null;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment name = arena.allocate(NAME_BYTES);
            // the kernel writes the name and its terminating zero into the zeroed segment
            return LibC.getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name) < 0 ? null
                    : name.getString(0, StandardCharsets.US_ASCII);
        }
    }
}
