package io.rdma4j.transport.internal;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportException;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InterfaceAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.Collections;

/** The host address a provider listens on for its peers (the TCP provider's data, the verbs provider's liveness). */
public final class HostAddress {
    private HostAddress() {
    }

    /**
     * The address to listen on: RDMA4J_TCP_ADDRESS, else the first IPv4 address of
     * RDMA4J_TCP_IFNAME, else of the first up, non-loopback, non-container interface (as NCCL
     * skips lo and docker*), else loopback.
     */
    public static InetAddress listenAddress(TransportConfig config) {
        try {
            if (config.tcpAddress() != null) {
                return InetAddress.getByName(config.tcpAddress());
            }
            if (config.tcpInterface() != null) {
                NetworkInterface nif = NetworkInterface.getByName(config.tcpInterface());
                if (nif == null || !nif.isUp()) {
                    throw new TransportException(-1, "network interface " + config.tcpInterface()
                            + " (" + TransportConfig.ENV_TCP_IFNAME + ") does not exist or is down");
                }
                InetAddress a = firstAddress(nif);
                if (a == null) {
                    throw new TransportException(-1, "network interface " + config.tcpInterface() + " has no address");
                }
                return a;
            }
            for (NetworkInterface nif : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                String name = nif.getName();
                if (nif.isUp() && !nif.isLoopback() && !name.startsWith("docker") && !name.startsWith("veth")
                        && !name.startsWith("virbr")) {
                    InetAddress a = firstAddress(nif);
                    if (a != null) {
                        return a;
                    }
                }
            }
            return InetAddress.getLoopbackAddress();
        } catch (UnknownHostException | SocketException e) {
            throw new TransportException(-1, "cannot determine the TCP listen address: " + e, e);
        }
    }

    private static InetAddress firstAddress(NetworkInterface nif) {
        InetAddress any = null;
        for (InterfaceAddress ia : nif.getInterfaceAddresses()) {
            InetAddress a = ia.getAddress();
            if (a instanceof Inet4Address) {
                return a;
            }
            if (any == null && !a.isLinkLocalAddress()) {
                any = a;
            }
        }
        return any;
    }
}
