package io.rdma4j.transport.verbs;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.internal.HostAddress;
import io.rdma4j.verbs.Access;
import io.rdma4j.verbs.DeviceAttributes;
import io.rdma4j.verbs.DeviceContext;
import io.rdma4j.verbs.DeviceDiscovery;
import io.rdma4j.verbs.GidEntry;
import io.rdma4j.verbs.Mtu;
import io.rdma4j.verbs.PortAttributes;
import io.rdma4j.verbs.ProtectionDomain;
import io.rdma4j.verbs.RcParams;
import io.rdma4j.verbs.RdmaDevices;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.List;

/**
 * The device, port and address a verbs transport uses, chosen from the configuration: the HCA
 * (RDMA4J_IB_HCA, else the first device), its port (RDMA4J_IB_PORT), which must be active, and on
 * RoCE the GID (RDMA4J_IB_GID_INDEX, else the preferred RoCE v2 IPv4-mapped one); InfiniBand ports
 * without a GID index are addressed by LID. Also the QP parameters the configuration fixes.
 */
final class VerbsDevice implements AutoCloseable {
    final DeviceContext context;
    final ProtectionDomain pd;
    final PortAttributes port;
    final DeviceAttributes attributes;
    /** The source GID, null when the port is addressed by LID. */
    final GidEntry gid;
    final Mtu mtu;
    final RcParams rc;

    private VerbsDevice(DeviceContext context, TransportConfig config) {
        this.context = context;
        int portNumber = config.ibPort();
        this.port = context.queryPort(portNumber);
        if (!port.isActive()) {
            throw new TransportException(-1, "port " + portNumber + " of " + context.name() + " is " + port.stateName()
                    + ", not ACTIVE (check the link, or choose another with " + TransportConfig.ENV_IB_HCA + "/"
                    + TransportConfig.ENV_IB_PORT + ")");
        }
        this.attributes = context.queryDevice();
        this.gid = chooseGid(context, port, config);
        this.mtu = chooseMtu(port, config);
        this.rc = RcParams.builder().port(portNumber)
                .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ)
                .mtu(mtu).gidIndex(gid == null ? -1 : gid.index()).trafficClass(config.ibTrafficClass())
                .serviceLevel(config.ibServiceLevel()).timeout(config.ibTimeout()).retryCount(retryCount(config))
                .rnrRetry(config.ibRnrRetry())
                .maxRdAtomic(Math.max(1, Math.min(16, attributes.maxQpInitRdAtom())))
                .maxDestRdAtomic(Math.max(1, Math.min(16, attributes.maxQpRdAtom())))
                .build();
        this.pd = context.allocateProtectionDomain();
    }

    /** Opens the configured device; every failure is a TransportException saying what to fix. */
    static VerbsDevice open(TransportConfig config) {
        DeviceDiscovery discovery = RdmaDevices.discover();
        if (!discovery.hasDevices()) {
            throw new TransportException(-1, "the verbs provider (" + TransportConfig.ENV_TRANSPORT
                    + "=verbs) found no RDMA device (" + discovery.status() + "): " + discovery.explanation());
        }
        DeviceContext ctx;
        try {
            ctx = RdmaDevices.open(config.ibHca());
        } catch (RuntimeException e) {
            throw new TransportException(-1, "the verbs provider could not open "
                    + (config.ibHca() == null ? "an RDMA device" : "RDMA device '" + config.ibHca() + "' ("
                    + TransportConfig.ENV_IB_HCA + ")") + ": " + e.getMessage(), e);
        }
        try {
            return new VerbsDevice(ctx, config);
        } catch (RuntimeException e) {
            ctx.close();
            throw e instanceof TransportException te ? te
                    : new TransportException(-1, "the verbs provider could not use " + ctx.name() + ": " + e.getMessage(), e);
        }
    }

    /**
     * The transport retry count to program. Soft-RoCE (rxe) deviates from the specification and
     * treats 7 like the RNR count's 7, as "retry forever", which would hide a dead peer for good;
     * there 7 becomes 6, the longest finite count.
     */
    private int retryCount(TransportConfig config) {
        int retry = config.ibRetryCount();
        if (retry == 7 && isSoftRoce()) {
            System.getLogger(VerbsDevice.class.getName()).log(System.Logger.Level.DEBUG, context.name()
                    + " is Soft-RoCE, where retry count 7 means infinite retries; using 6 so that a dead peer is detected");
            return 6;
        }
        return retry;
    }

    /** rxe reports vendor id 0xFFFFFF (RXE_VENDOR_ID). */
    boolean isSoftRoce() {
        return attributes.vendorId() == 0xFFFFFF || context.name().startsWith("rxe");
    }

    /** Whether {@link #open} would succeed (a device, an active port, an address); never throws. */
    static boolean usable(TransportConfig config) {
        try {
            if (!RdmaDevices.discover().hasDevices()) {
                return false;
            }
            open(config).close();
            return true;
        } catch (RuntimeException | LinkageError e) {
            return false;
        }
    }

    private static GidEntry chooseGid(DeviceContext ctx, PortAttributes port, TransportConfig config) {
        int index = config.ibGidIndex();
        if (index < 0) {
            if (!port.isEthernet()) {
                return null; // InfiniBand: LID-routed, no global route header
            }
            try {
                return ctx.preferredGid(port.port());
            } catch (RuntimeException e) {
                throw new TransportException(-1, e.getMessage(), e);
            }
        }
        List<GidEntry> table = ctx.gidTable(port.port());
        for (GidEntry e : table) {
            if (e.index() == index) {
                return e;
            }
        }
        throw new TransportException(-1, "GID index " + index + " (" + TransportConfig.ENV_IB_GID_INDEX + ") of "
                + ctx.name() + " port " + port.port() + " is not populated; populated: "
                + table.stream().map(e -> e.index() + "=" + e.gid() + " " + e.type()).toList());
    }

    private static Mtu chooseMtu(PortAttributes port, TransportConfig config) {
        Mtu active = port.activeMtu() == null ? Mtu.MTU_1024 : port.activeMtu();
        if (config.ibMtu() == 0) {
            return active;
        }
        Mtu wanted = Mtu.MTU_256;
        for (Mtu m : Mtu.values()) {
            if (m.bytes() == config.ibMtu()) {
                wanted = m;
            }
        }
        return wanted.bytes() <= active.bytes() ? wanted : active;
    }

    /** The path MTU two sides agree on: the smaller of their own. */
    static Mtu common(Mtu mine, int theirsBytes) {
        return theirsBytes > 0 && theirsBytes < mine.bytes() ? mtuOf(theirsBytes) : mine;
    }

    private static Mtu mtuOf(int bytes) {
        for (Mtu m : Mtu.values()) {
            if (m.bytes() == bytes) {
                return m;
            }
        }
        return Mtu.MTU_256;
    }

    /**
     * Where this side's {@link Liveness} listener goes: on RoCE the IPv4 address inside the GID
     * (that of the NIC's own netdev, which peers reach), else the address the TCP provider would
     * listen on (RDMA4J_TCP_ADDRESS / RDMA4J_TCP_IFNAME / first interface).
     */
    InetAddress livenessAddress(TransportConfig config) {
        byte[] raw = gid == null ? null : gid.gid().raw();
        if (raw != null && isIpv4Mapped(raw)) {
            try {
                return InetAddress.getByAddress(Arrays.copyOfRange(raw, 12, 16));
            } catch (UnknownHostException e) {
                throw new IllegalStateException("4 address bytes refused", e);
            }
        }
        try {
            return HostAddress.listenAddress(config);
        } catch (TransportException e) {
            System.getLogger(VerbsDevice.class.getName()).log(System.Logger.Level.WARNING, "liveness listener on loopback: " + e.getMessage());
            return InetAddress.getLoopbackAddress();
        }
    }

    private static boolean isIpv4Mapped(byte[] gid) {
        for (int i = 0; i < 10; i++) {
            if (gid[i] != 0) {
                return false;
            }
        }
        return gid[10] == (byte) 0xFF && gid[11] == (byte) 0xFF;
    }

    int lid() {
        return port.lid();
    }

    String describe() {
        return context.name() + " port " + port.port() + " (" + port.linkLayerName() + ", MTU " + mtu.bytes()
                + (gid == null ? ", LID " + port.lid() : ", GID " + gid.index() + " " + gid.gid() + " " + gid.type()) + ")";
    }

    /**
     * Closes the protection domain and the device; their handles are freed once every QP, CQ
     * and MR made on them is closed too (the transport closes those first).
     */
    @Override
    public void close() {
        try {
            pd.close();
        } finally {
            context.close();
        }
    }
}
