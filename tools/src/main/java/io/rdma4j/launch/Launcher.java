package io.rdma4j.launch;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.TcpStore;
import io.rdma4j.transport.bootstrap.TcpStoreServer;

import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code rdma4j launch}: starts this node's ranks of a job, torchrun style (see
 * {@link LaunchOptions#USAGE}). Node 0's launcher hosts the job's store on MASTER_ADDR:MASTER_PORT
 * (the ranks are told RDMA4J_STORE_SERVER=0), so the store outlives any rank, and the port can
 * be any free one on a single node. Each rank gets the env:// variables; the ranks' output is
 * forwarded with a "[rank N]" prefix; when a rank fails, this node's ranks are stopped, the
 * other nodes are told through the store and stop theirs, and the launcher exits with the
 * failing rank's exit code, naming it.
 */
public final class Launcher {
    private static final String TAG = "rdma4j-launch: ";

    private Launcher() {
    }

    public static void main(String[] args) throws InterruptedException {
        System.exit(run(args, System.getenv(), System.out, System.err));
    }

    /**
     * Runs a launch to its end.
     *
     * @param env the environment: where defaults (PET_*, MASTER_*, RDMA4J_JOB_TOKEN) are read,
     *            and what the ranks inherit (plus the env:// variables)
     * @return the exit status (see {@link LaunchOptions#USAGE})
     */
    public static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err)
            throws InterruptedException {
        LaunchOptions o;
        try {
            o = LaunchOptions.parse(args, env);
        } catch (LaunchOptions.UsageException e) {
            if (!e.getMessage().isEmpty()) {
                err.println(TAG + e.getMessage());
            }
            (e.getMessage().isEmpty() ? out : err).print(LaunchOptions.USAGE);
            return e.getMessage().isEmpty() ? 0 : 2;
        }
        String token = o.jobToken() != null ? o.jobToken() : HexFormat.of().formatHex(SecureRandom.getSeed(16));
        boolean hostsStore = o.nodeRank() == 0;
        TcpStoreServer server = null;
        JobControl control = null;
        int port = o.masterPort();
        try {
            if (hostsStore) {
                server = TcpStoreServer.start(storeBindAddress(o.masterAddr(), port), token);
                port = server.port();
            }
            if (o.nnodes() > 1) {
                int storePort = port;
                control = new JobControl(() -> TcpStore.builder().address(o.masterAddr()).port(storePort).token(token)
                        .timeout(o.rdzvTimeout()).build(), o.nnodes());
            }
        } catch (RuntimeException e) {
            err.println(TAG + (hostsStore ? "cannot host the job's store on " + o.masterAddr() + ":" + port
                    : "cannot reach the job's store at " + o.masterAddr() + ":" + port) + ": " + e.getMessage());
            if (server != null) {
                server.close();
            }
            return 1;
        }
        try {
            return launch(o, token, port, hostsStore, control, env, out, err);
        } finally {
            if (control != null) {
                control.close();
            }
            if (server != null) {
                server.close();
            }
        }
    }

    private static int launch(LaunchOptions o, String token, int port, boolean hostsStore, JobControl control,
                              Map<String, String> env, PrintStream out, PrintStream err) throws InterruptedException {
        int first = o.nodeRank() * o.nprocPerNode();
        LocalRanks ranks;
        try {
            ranks = LocalRanks.builder()
                    .ranks(o.nprocPerNode())
                    .firstRank(first)
                    .command(o.command())
                    .environment(local -> rankEnvironment(o, token, port, local, env))
                    .output(RankOutput.prefixed(out, err))
                    .gracePeriod(o.grace())
                    .start();
        } catch (RuntimeException e) {
            err.println(TAG + e.getMessage());
            if (control != null) {
                control.reportFailure("node " + o.nodeRank() + " could not start its ranks: " + e.getMessage());
            }
            return 1;
        }
        Thread onSignal = new Thread(() -> ranks.stop("rdma4j-launch was terminated"));
        Runtime.getRuntime().addShutdownHook(onSignal);
        AtomicReference<String> remoteFailure = new AtomicReference<>();
        try (ranks) {
            if (control != null) {
                control.watchFailures(why -> {
                    remoteFailure.compareAndSet(null, why);
                    ranks.stop(why);
                });
            }
            RankOutcome outcome = ranks.await(o.maxTime());
            if (outcome.kind() == RankOutcome.Kind.RANK_FAILED && control != null) {
                control.reportFailure(outcome.detail() + " (node " + o.nodeRank() + ")");
            }
            int status = outcome.launcherExitStatus();
            switch (outcome.kind()) {
                case SUCCEEDED -> { }
                case RANK_FAILED -> err.println(TAG + "rank " + outcome.rank() + " failed: " + outcome.detail()
                        + "; stopped the other ranks (exit codes by local rank: " + outcome.exitCodes() + ")");
                case STOPPED, TIMED_OUT -> err.println(TAG + "stopped the ranks: " + outcome.detail());
            }
            if (control != null) {
                int missing = control.finish(hostsStore, o.rdzvTimeout());
                if (missing > 0) {
                    err.println(TAG + missing + " node(s) did not finish within " + o.rdzvTimeout().toSeconds()
                            + " s; closing the job's store anyway");
                }
                if (status == 0 && remoteFailure.get() != null) {
                    err.println(TAG + "this node's ranks succeeded, but the job failed: " + remoteFailure.get());
                    status = 1;
                }
            }
            return status;
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(onSignal);
            } catch (IllegalStateException exiting) {
                // the JVM is already shutting down: the hook runs (stop is idempotent)
            }
        }
    }

    /**
     * MASTER_ADDR itself when it is an address of this host (nothing else needs to reach the
     * store), else every interface: behind a Kubernetes service or NAT, MASTER_ADDR names an
     * address this host does not have.
     */
    static InetSocketAddress storeBindAddress(String masterAddr, int port) {
        try {
            InetAddress a = InetAddress.getByName(masterAddr);
            if (a.isLoopbackAddress() || NetworkInterface.getByInetAddress(a) != null) {
                return new InetSocketAddress(a, port);
            }
        } catch (UnknownHostException | SocketException e) {
            // not resolvable here (yet): listen everywhere
        }
        return new InetSocketAddress(port);
    }

    /** {@code env} plus the env:// contract for local rank {@code local} and the store and transport hints. */
    static Map<String, String> rankEnvironment(LaunchOptions o, String token, int port, int local,
                                               Map<String, String> env) {
        Map<String, String> e = new HashMap<>(env);
        e.put(TcpStore.ENV_MASTER_ADDR, o.masterAddr());
        e.put(TcpStore.ENV_MASTER_PORT, Integer.toString(port));
        e.put(TcpStore.ENV_RANK, Integer.toString(o.nodeRank() * o.nprocPerNode() + local));
        e.put("WORLD_SIZE", Integer.toString(o.worldSize()));
        e.put("LOCAL_RANK", Integer.toString(local));
        e.put("LOCAL_WORLD_SIZE", Integer.toString(o.nprocPerNode()));
        e.put("NODE_RANK", Integer.toString(o.nodeRank()));
        e.put("GROUP_RANK", Integer.toString(o.nodeRank()));
        e.put(TcpStore.ENV_JOB_TOKEN, token);
        // this launcher (node 0's) hosts the store, not rank 0
        e.put(TcpStore.ENV_STORE_SERVER, "0");
        if (o.nnodes() == 1 && env.get(TransportConfig.ENV_TCP_ADDRESS) == null
                && env.get(TransportConfig.ENV_TCP_IFNAME) == null) {
            // every peer is on this host: keep rank-to-rank TCP on loopback
            e.put(TransportConfig.ENV_TCP_ADDRESS, "127.0.0.1");
        }
        return e;
    }
}
