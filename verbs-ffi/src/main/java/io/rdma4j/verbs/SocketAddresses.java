package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.RdmaCm;
import io.rdma4j.verbs.ffi.in_addr;
import io.rdma4j.verbs.ffi.sockaddr_in;
import io.rdma4j.verbs.ffi.sockaddr_in6;
import io.rdma4j.verbs.ffi.sockaddr_storage;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetSocketAddress;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/** InetSocketAddress to {@code struct sockaddr_in}/{@code sockaddr_in6}, as rdma_cm takes them. */
final class SocketAddresses {
    private SocketAddresses() {
    }

    static MemorySegment toNative(InetSocketAddress address, Arena arena) {
        if (address.isUnresolved()) {
            throw new IllegalArgumentException("unresolved address " + address);
        }
        MemorySegment sa = arena.allocate(sockaddr_storage.layout());
        sa.fill((byte) 0);
        byte[] ip = address.getAddress().getAddress();
        short port = Short.reverseBytes((short) address.getPort()); // network byte order
        if (address.getAddress() instanceof Inet4Address) {
            sockaddr_in.sin_family(sa, (short) RdmaCm.AF_INET());
            sockaddr_in.sin_port(sa, port);
            MemorySegment.copy(ip, 0, sockaddr_in.sin_addr(sa), JAVA_BYTE, in_addr.s_addr$offset(), ip.length);
        } else {
            sockaddr_in6.sin6_family(sa, (short) RdmaCm.AF_INET6());
            sockaddr_in6.sin6_port(sa, port);
            MemorySegment.copy(ip, 0, sockaddr_in6.sin6_addr(sa), JAVA_BYTE, 0, ip.length);
            // the interface of a link-local address (fe80::1%eth0): the kernel refuses one without it
            sockaddr_in6.sin6_scope_id(sa, ((Inet6Address) address.getAddress()).getScopeId());
        }
        return sa;
    }
}
