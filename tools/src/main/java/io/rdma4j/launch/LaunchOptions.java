package io.rdma4j.launch;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The launcher's command line, with torchrun's defaults from the environment: Kubeflow's
 * PyTorchJob sets PET_NNODES, PET_NODE_RANK, PET_NPROC_PER_NODE, PET_MASTER_ADDR and
 * PET_MASTER_PORT (and MASTER_ADDR / MASTER_PORT) on every pod, so there a bare
 * {@code rdma4j launch --main-class X} needs no flags. Flags win over the environment.
 *
 * @param nprocPerNode ranks started by this launcher
 * @param nnodes       launchers (nodes) in the job
 * @param nodeRank     this launcher's index; it starts ranks nodeRank*nprocPerNode ...
 * @param masterAddr   host of the job's store (node 0's launcher hosts it)
 * @param masterPort   its port; 0 = any free port (single node only)
 * @param jobToken     the job's secret, null = generate one (single node only)
 * @param command      the command line of every rank
 * @param grace        SIGTERM-to-SIGKILL delay when ranks are stopped
 * @param maxTime      stop the ranks after this long
 * @param rdzvTimeout  how long launchers wait for each other (connecting, finishing)
 */
public record LaunchOptions(int nprocPerNode, int nnodes, int nodeRank, String masterAddr, int masterPort,
                            String jobToken, List<String> command, Duration grace, Duration maxTime,
                            Duration rdzvTimeout) {

    /** torchrun's default port, used when several nodes must agree on one without being told. */
    public static final int DEFAULT_MULTI_NODE_PORT = 29500;

    public static final String USAGE = """
            usage: rdma4j launch [options] --main-class CLASS [ARGS...]
                   rdma4j launch [options] [--] COMMAND [ARGS...]
            Starts --nproc-per-node ranks on this node with the env:// variables set (MASTER_ADDR,
            MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK, RDMA4J_JOB_TOKEN),
            prefixes their output with [rank N], and stops them all if one fails.
            options (defaults from PET_* / MASTER_* variables where set, as torchrun):
              --nproc-per-node N   ranks on this node (PET_NPROC_PER_NODE, default 1)
              --nnodes M           nodes in the job (PET_NNODES, default 1)
              --node-rank R        this node's index 0..M-1 (PET_NODE_RANK, default 0)
              --master-addr HOST   node 0's address (PET_MASTER_ADDR, MASTER_ADDR; default 127.0.0.1 on one node)
              --master-port PORT   store port (PET_MASTER_PORT, MASTER_PORT; default: a free port on one node,
                                   %d on several)
              --job-token T        the job's secret (RDMA4J_JOB_TOKEN; required on several nodes, the same on all)
              --main-class CLASS   run CLASS on this JVM's java with --enable-native-access=ALL-UNNAMED
                                   and --add-modules=jdk.incubator.vector
              --classpath CP       class path for --main-class (default: this JVM's)
              --java-opt OPT       extra JVM option for --main-class (repeatable)
              --grace-period S     seconds between SIGTERM and SIGKILL when stopping ranks (default 10)
              --max-time S         stop the ranks and fail after S seconds (default: no limit)
              --rdzv-timeout S     how long nodes wait for each other (default 300)
            exit status: 0 when every rank exits 0; the failing rank's exit code when one fails;
            1 when stopped (another node's rank failed, time limit, signal); 2 for a usage error.
            """.formatted(DEFAULT_MULTI_NODE_PORT);

    /** A usage error: the message says which flag and why. */
    public static final class UsageException extends IllegalArgumentException {
        public UsageException(String message) {
            super(message);
        }
    }

    public LaunchOptions {
        command = List.copyOf(command);
    }

    public int worldSize() {
        return nprocPerNode * nnodes;
    }

    /**
     * Parses {@code args}; {@code env} supplies torchrun-style defaults and the job token.
     *
     * @throws UsageException naming the offending flag
     */
    public static LaunchOptions parse(String[] args, Map<String, String> env) {
        Integer nproc = null;
        Integer nnodes = null;
        Integer nodeRank = null;
        String addr = null;
        Integer port = null;
        String token = null;
        String mainClass = null;
        String classPath = null;
        List<String> javaOpts = new ArrayList<>();
        List<String> command = new ArrayList<>();
        Duration grace = Duration.ofSeconds(10);
        Duration maxTime = null;
        Duration rdzv = Duration.ofSeconds(300);
        int i = 0;
        while (i < args.length) {
            String a = args[i];
            if (a.equals("--")) {
                command.addAll(List.of(args).subList(i + 1, args.length));
                break;
            }
            if (!a.startsWith("--")) {
                command.addAll(List.of(args).subList(i, args.length));
                break;
            }
            // torchrun spells its flags with underscores too (--nproc_per_node)
            String name = a.substring(2).replace('_', '-').toLowerCase(Locale.ROOT);
            String value = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = a.substring(2 + eq + 1);
                name = name.substring(0, eq);
            } else if (!name.equals("help")) {
                if (i + 1 >= args.length) {
                    throw new UsageException("--" + name + " needs a value");
                }
                value = args[++i];
            }
            i++;
            switch (name) {
                case "help" -> throw new UsageException("");
                case "nproc-per-node" -> nproc = positive(name, value);
                case "nnodes" -> nnodes = positive(name, value);
                case "node-rank" -> nodeRank = nonNegative(name, value);
                case "master-addr" -> addr = value;
                case "master-port" -> port = port(name, value);
                case "job-token" -> token = value;
                case "classpath", "cp" -> classPath = value;
                case "java-opt" -> javaOpts.add(value);
                case "grace-period" -> grace = Duration.ofMillis(Math.round(seconds(name, value) * 1000));
                case "max-time" -> maxTime = Duration.ofMillis(Math.round(seconds(name, value) * 1000));
                case "rdzv-timeout" -> rdzv = Duration.ofMillis(Math.round(seconds(name, value) * 1000));
                case "main-class" -> {
                    mainClass = value;
                    command.addAll(List.of(args).subList(i, args.length));
                    i = args.length;
                }
                default -> throw new UsageException("unknown option --" + name);
            }
        }
        nproc = nproc != null ? nproc : fromEnv(env, "PET_NPROC_PER_NODE", 1, true);
        nnodes = nnodes != null ? nnodes : fromEnv(env, "PET_NNODES", 1, true);
        nodeRank = nodeRank != null ? nodeRank : fromEnv(env, "PET_NODE_RANK", 0, false);
        if (nodeRank >= nnodes) {
            throw new UsageException("--node-rank " + nodeRank + " outside --nnodes " + nnodes);
        }
        addr = firstOf(addr, env.get("PET_MASTER_ADDR"), env.get("MASTER_ADDR"));
        if (addr == null || addr.isBlank()) {
            if (nnodes > 1) {
                throw new UsageException("--master-addr (node 0's address) is required with --nnodes " + nnodes);
            }
            addr = "127.0.0.1";
        }
        if (port == null) {
            String p = firstOf(env.get("PET_MASTER_PORT"), env.get("MASTER_PORT"));
            port = p != null ? port("MASTER_PORT", p) : nnodes > 1 ? DEFAULT_MULTI_NODE_PORT : 0;
        }
        if (port == 0 && nnodes > 1) {
            throw new UsageException("--master-port 0 (any port) works on one node only: every node must know the port");
        }
        token = firstOf(token, env.get("RDMA4J_JOB_TOKEN"));
        if (token != null && token.isEmpty()) {
            throw new UsageException("the job token must not be empty");
        }
        if (token == null && nnodes > 1) {
            throw new UsageException("several nodes need one job token: pass --job-token or set RDMA4J_JOB_TOKEN to the"
                    + " same secret on every node (e.g. from a Kubernetes Secret or `openssl rand -hex 16`)");
        }
        if (mainClass != null) {
            List<String> full = new ArrayList<>();
            full.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            full.add("--enable-native-access=ALL-UNNAMED");
            // the collectives' SIMD reduction kernels (scalar without it)
            full.add("--add-modules=jdk.incubator.vector");
            full.addAll(javaOpts);
            full.add("-cp");
            full.add(classPath != null ? classPath : System.getProperty("java.class.path"));
            full.add(mainClass);
            full.addAll(command);
            command = full;
        } else if (!javaOpts.isEmpty() || classPath != null) {
            throw new UsageException("--java-opt and --classpath apply to --main-class only");
        }
        if (command.isEmpty()) {
            throw new UsageException("no command: give --main-class CLASS or a command after the options");
        }
        return new LaunchOptions(nproc, nnodes, nodeRank, addr.trim(), port, token, command, grace,
                maxTime != null ? maxTime : LocalRanks.NO_LIMIT, rdzv);
    }

    private static String firstOf(String... values) {
        for (String v : values) {
            if (v != null && !v.isBlank()) {
                return v.trim();
            }
        }
        return null;
    }

    private static int fromEnv(Map<String, String> env, String name, int dflt, boolean positive) {
        String v = env.get(name);
        if (v == null || v.isBlank()) {
            return dflt;
        }
        return positive ? positive(name, v) : nonNegative(name, v);
    }

    private static int integer(String name, String v) {
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new UsageException(name + ": '" + v + "' is not an integer");
        }
    }

    private static int positive(String name, String v) {
        int n = integer(name, v);
        if (n < 1) {
            throw new UsageException(name + " must be >= 1, was " + n);
        }
        return n;
    }

    private static int nonNegative(String name, String v) {
        int n = integer(name, v);
        if (n < 0) {
            throw new UsageException(name + " must be >= 0, was " + n);
        }
        return n;
    }

    private static int port(String name, String v) {
        int n = integer(name, v);
        if (n < 0 || n > 65535) {
            throw new UsageException(name + " must be a port 0..65535, was " + n);
        }
        return n;
    }

    private static double seconds(String name, String v) {
        try {
            double s = Double.parseDouble(v.trim());
            if (!(s >= 0)) {
                throw new NumberFormatException();
            }
            return s;
        } catch (NumberFormatException e) {
            throw new UsageException(name + ": '" + v + "' is not a number of seconds >= 0");
        }
    }
}
