package io.rdma4j.examples;

import io.rdma4j.launch.Launcher;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two "hosts" on one machine: two network namespaces joined by a veth pair (addresses from the
 * 198.18.0.0/15 benchmarking range, assigned inside the namespaces only, so nothing of this
 * reaches the machine's own network). In each namespace a launcher starts 2 ranks
 * (--nnodes 2); the ranks run the two-hop allreduce: shared memory inside a "host", the TCP
 * provider across the veth. The veth's byte counters prove the data crossed the interface.
 * Needs root and iproute2 ({@code ip netns}); skipped, saying why, otherwise.
 */
@Timeout(150)
class NetnsTwoHostTest {
    private static final long ELEMENTS = 1 << 20;
    /** Names unique per run, so that concurrent runs on one machine do not collide. */
    private final String id = String.format("%06x", ThreadLocalRandom.current().nextInt(1 << 24));
    private final List<String> namespaces = new ArrayList<>();
    private Path ip;

    @AfterEach
    void removeNamespaces() throws Exception {
        for (String ns : namespaces) {
            // deleting a namespace deletes its end of the veth pair, and with it the other end
            Shell.run(List.of(ip.toString(), "netns", "del", ns), Map.of(), Duration.ofSeconds(30));
        }
    }

    private String skipReason() throws Exception {
        if (Shell.uid() != 0) {
            return "not root (network namespaces need CAP_SYS_ADMIN)";
        }
        ip = Shell.which("ip");
        if (ip == null) {
            return "no 'ip' command (Debian: apt-get install iproute2)";
        }
        return null;
    }

    @Test
    void twoHopAllReduceAcrossAVethBetweenTwoNamespaces() throws Exception {
        String reason = skipReason();
        if (reason != null) {
            System.out.println("SKIPPED NetnsTwoHostTest: " + reason);
        }
        Assumptions.assumeTrue(reason == null, reason);
        String[] ns = {"rdma4j-" + id + "-a", "rdma4j-" + id + "-b"};
        String[] dev = {"r4j" + id + "a", "r4j" + id + "b"};
        String[] addr = {"198.18.0.1", "198.18.0.2"};
        for (String n : ns) {
            Shell.check(List.of(ip.toString(), "netns", "add", n));
            namespaces.add(n);
        }
        // both ends created directly inside their namespaces: the root namespace never has them
        Shell.check(List.of(ip.toString(), "link", "add", dev[0], "netns", ns[0], "type", "veth", "peer", "name", dev[1],
                "netns", ns[1]));
        for (int h = 0; h < 2; h++) {
            Shell.check(List.of(ip.toString(), "-n", ns[h], "addr", "add", addr[h] + "/30", "dev", dev[h]));
            Shell.check(List.of(ip.toString(), "-n", ns[h], "link", "set", "lo", "up"));
            Shell.check(List.of(ip.toString(), "-n", ns[h], "link", "set", dev[h], "up"));
        }
        for (int h = 0; h < 2; h++) {
            awaitCarrier(ns[h], dev[h]);
        }
        long[] before = {txBytes(ns[0], dev[0]), txBytes(ns[1], dev[1])};

        String token = HexFormat.of().formatHex(java.security.SecureRandom.getSeed(16));
        Ranks.Launch l = Ranks.startByHand(2, h -> {
            List<String> c = new ArrayList<>(List.of(ip.toString(), "netns", "exec", ns[h]));
            c.addAll(Ranks.java(Launcher.class, "--nnodes", "2", "--node-rank", Integer.toString(h),
                    "--nproc-per-node", "2", "--master-addr", addr[0], "--master-port", "29500", "--job-token", token,
                    "--rdzv-timeout", "60", "--max-time", "120", "--grace-period", "2"));
            for (String opt : Ranks.SMALL_JVM) {
                c.add("--java-opt");
                c.add(opt);
            }
            c.addAll(List.of("--main-class", AllReduceCheck.class.getName(), Long.toString(ELEMENTS)));
            return c;
        }, h -> Map.of("RDMA4J_TRANSPORT", "tcp", "RDMA4J_ALGO", "twohop", "RDMA4J_TCP_IFNAME", dev[h],
                "RDMA4J_HOST_ID", "host-" + h, "RDMA4J_TIMEOUT_MS", "60000"), Duration.ofSeconds(130));
        assertEquals(0, l.status(), l::all);
        for (int r = 0; r < 4; r++) {
            assertTrue(l.out().contains("] [rank " + r + "] allreduce OK rank " + r + "/4 local " + (r % 2)
                    + "/2 hosts 2 provider tcp algorithm twohop elements " + ELEMENTS), l::all);
        }
        // the inter-host hop moved each local rank's half of the 4 MiB vector across the veth, both ways
        long payload = ELEMENTS * 4;
        for (int h = 0; h < 2; h++) {
            long sent = txBytes(ns[h], dev[h]) - before[h];
            System.out.printf("netns %s: %d bytes sent over %s (vector: %d bytes)%n", ns[h], sent, dev[h], payload);
            assertTrue(sent >= payload / 2, "only " + sent + " bytes left host " + h + " over " + dev[h]);
        }
    }

    /**
     * A veth reports carrier (operstate "up", which Java's NetworkInterface.isUp() requires)
     * only some time after both ends were set up.
     */
    private void awaitCarrier(String ns, String dev) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        String state = "";
        while (System.nanoTime() - deadline < 0) {
            state = Shell.check(List.of(ip.toString(), "netns", "exec", ns, "cat", "/sys/class/net/" + dev + "/operstate")).trim();
            if (state.equals("up")) {
                return;
            }
            Thread.sleep(50);
        }
        throw new AssertionError(dev + " in " + ns + " still " + state + " after 10 s");
    }

    private long txBytes(String ns, String dev) throws Exception {
        return Long.parseLong(Shell.check(List.of(ip.toString(), "netns", "exec", ns, "cat",
                "/sys/class/net/" + dev + "/statistics/tx_bytes")).trim());
    }
}
