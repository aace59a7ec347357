package io.rdma4j.tools;

import io.rdma4j.verbs.DeviceAttributes;
import io.rdma4j.verbs.DeviceContext;
import io.rdma4j.verbs.DeviceDiscovery;
import io.rdma4j.verbs.DeviceInfo;
import io.rdma4j.verbs.GidEntry;
import io.rdma4j.verbs.Mtu;
import io.rdma4j.verbs.PortAttributes;
import io.rdma4j.verbs.RdmaDevices;
import io.rdma4j.verbs.VerbsException;

import java.io.PrintStream;
import java.util.List;
import java.util.Optional;

/**
 * {@code verbs-info}: prints the RDMA devices, their ports, GID tables and key capabilities, or
 * one paragraph on why there are none and what to do about it.
 *
 * <p>Exit status: 0 when a report was printed, including "no devices" (that is a valid answer
 * about this machine); 1 when a device was listed but could not be opened or queried; 2 for bad
 * usage; 3 with {@code --require-device} when there is no device (for scripts that need one).
 */
public final class VerbsInfo {
    private static final String USAGE = "usage: verbs-info [--require-device]";

    private VerbsInfo() {
    }

    public static void main(String[] args) {
        boolean requireDevice = false;
        for (String a : args) {
            if (a.equals("--require-device")) {
                requireDevice = true;
            } else if (a.equals("-h") || a.equals("--help")) {
                System.out.println(USAGE);
                System.exit(0);
            } else {
                System.err.println("verbs-info: unknown option " + a);
                System.err.println(USAGE);
                System.exit(2);
            }
        }
        System.exit(report(RdmaDevices.discover(), System.out, requireDevice));
    }

    static int report(DeviceDiscovery discovery, PrintStream out, boolean requireDevice) {
        out.println("rdma4j verbs-info: " + discovery.status());
        if (!discovery.hasDevices()) {
            out.println(wrap(discovery.explanation(), 100));
            return requireDevice ? 3 : 0;
        }
        int status = 0;
        for (DeviceInfo d : discovery.devices()) {
            try (DeviceContext ctx = RdmaDevices.open(d.name())) {
                printDevice(ctx, d, out);
            } catch (VerbsException e) {
                out.println("device " + d.name() + ": " + e.getMessage());
                status = 1;
            }
        }
        return status;
    }

    private static void printDevice(DeviceContext ctx, DeviceInfo d, PrintStream out) {
        DeviceAttributes a = ctx.queryDevice();
        out.printf("device %s  node GUID %s  firmware %s  vendor 0x%x part %d hw %d%n", d.name(), a.nodeGuidHex(),
                a.firmwareVersion().isEmpty() ? "-" : a.firmwareVersion(), a.vendorId(), a.vendorPartId(),
                a.hardwareVersion());
        out.printf("  max_qp %d  max_qp_wr %d  max_cq %d  max_cqe %d  max_mr %d  max_mr_size %d  max_pd %d%n",
                a.maxQp(), a.maxQpWr(), a.maxCq(), a.maxCqe(), a.maxMr(), a.maxMrSize(), a.maxPd());
        out.printf("  max_sge %d  max_sge_rd %d  max_qp_rd_atom %d  max_qp_init_rd_atom %d  atomic_cap %s"
                        + "  completion vectors %d  ports %d%n", a.maxSge(), a.maxSgeRd(), a.maxQpRdAtom(),
                a.maxQpInitRdAtom(), a.atomicCapName(), ctx.completionVectors(), a.physicalPortCount());
        for (int port = 1; port <= a.physicalPortCount(); port++) {
            PortAttributes p = ctx.queryPort(port);
            out.printf("  port %d: %s  link layer %s  active MTU %s (max %s)  speed %s  lid %d%n", port, p.stateName(),
                    p.linkLayerName(), mtu(p.activeMtu()), mtu(p.maxMtu()), p.speedDescription(), p.lid());
            List<GidEntry> gids = ctx.gidTable(port);
            Optional<GidEntry> preferred = GidEntry.preferred(gids);
            for (GidEntry g : gids) {
                out.printf("    GID[%d] %-40s %s%s%n", g.index(), g.gid(), g.type(),
                        preferred.filter(g::equals).isPresent() ? "  <- preferred" : "");
            }
            if (gids.isEmpty()) {
                out.println("    no GIDs" + (p.isEthernet() ? " (give the port's network interface an IP address)" : ""));
            }
        }
    }

    private static String mtu(Mtu m) {
        return m == null ? "-" : Integer.toString(m.bytes());
    }

    /** Breaks a paragraph at spaces so it reads well in a terminal. */
    static String wrap(String text, int width) {
        StringBuilder out = new StringBuilder();
        int col = 0;
        for (String word : text.split(" ")) {
            if (col > 0 && col + 1 + word.length() > width) {
                out.append('\n');
                col = 0;
            } else if (col > 0) {
                out.append(' ');
                col++;
            }
            out.append(word);
            col += word.length();
        }
        return out.toString();
    }
}
