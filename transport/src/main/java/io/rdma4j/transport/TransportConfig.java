package io.rdma4j.transport;

import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * Every transport setting in one place. Built with {@link #builder()}, optionally seeded from
 * the environment ({@link Builder#fromEnvironment()}), with names in the style of NCCL_IB_*:
 *
 * <pre>
 * RDMA4J_TRANSPORT            verbs | shm | tcp | auto (default auto)
 * RDMA4J_IB_HCA               device name, e.g. mlx5_0 or rxe0 (default: the first libibverbs lists)
 * RDMA4J_IB_PORT              port number (default 1)
 * RDMA4J_IB_GID_INDEX         GID index, -1 picks a RoCE v2 IPv4 GID (default -1)
 * RDMA4J_IB_QPS_PER_CONNECTION queue pairs per connection, messages striped over them (default 1)
 * RDMA4J_IB_TIMEOUT           local ACK timeout exponent, 4.096 us * 2^t (default 18)
 * RDMA4J_IB_RETRY_CNT         transport retry count 0..7 (default 7)
 * RDMA4J_IB_RNR_RETRY         RNR retry count 0..7, 7 = infinite (default 7)
 * RDMA4J_IB_MTU               256 | 512 | 1024 | 2048 | 4096, 0 = port's active MTU (default 0)
 * RDMA4J_IB_SL                service level 0..15 (default 0)
 * RDMA4J_IB_TC                traffic class 0..255 (default 0)
 * RDMA4J_SIGNAL_INTERVAL      signal every Nth work request (default 16)
 * RDMA4J_BATCH_SIZE           work requests per doorbell batch (default 32)
 * RDMA4J_IDLE_STRATEGY        busy-spin | yield | backoff (default backoff)
 * RDMA4J_HUGE_PAGES           true | false: buffer pool on 2 MiB pages (default false)
 * RDMA4J_PROGRESS_THREAD      true | false: a completion-polling thread per transport (it idles per
 *                             RDMA4J_IDLE_STRATEGY), in addition to the progress callers drive
 *                             (verbs; default false)
 * RDMA4J_PROGRESS_CPU         CPU that completion thread is pinned to, -1 = not pinned (default -1)
 * RDMA4J_TIMEOUT_MS           connection and operation timeout in ms (default 60000)
 * RDMA4J_MAX_REQUESTS         outstanding requests per transport (default 4096)
 * RDMA4J_REGISTRATION_CAP_BYTES caller memory the verbs provider keeps registered (pinned) at most;
 *                             least recently used idle registrations go first (default: no cap)
 * RDMA4J_TCP_IFNAME           network interface whose address the TCP provider listens on
 * RDMA4J_TCP_ADDRESS          address the TCP provider listens on (overrides the interface)
 * RDMA4J_TCP_CONGESTION       TCP congestion control of the provider's connections: auto (reno
 *                             between ranks of one host, the host's default otherwise), system (the
 *                             host's default for all) or an algorithm's name for all (default auto)
 * RDMA4J_SHM_DIR              directory of the shared-memory files (default /dev/shm)
 * </pre>
 *
 * Invalid values fail at {@link Builder#build()} (or when read from the environment) with a
 * message naming the setting. Immutable.
 */
public final class TransportConfig {

    private static final System.Logger LOG = System.getLogger(TransportConfig.class.getName());

    /** The most requests a transport may have outstanding at once ({@link Builder#maxOutstandingRequests}). */
    public static final int MAX_OUTSTANDING_REQUESTS = 1 << 20;
    /** The longest {@link #timeout()}: one whose nanoseconds fit a long (about 292 years). */
    public static final Duration MAX_TIMEOUT = Duration.ofNanos(Long.MAX_VALUE).truncatedTo(ChronoUnit.MILLIS);

    /** Environment variable names. */
    public static final String ENV_TRANSPORT = "RDMA4J_TRANSPORT";
    public static final String ENV_IB_HCA = "RDMA4J_IB_HCA";
    public static final String ENV_IB_PORT = "RDMA4J_IB_PORT";
    public static final String ENV_IB_GID_INDEX = "RDMA4J_IB_GID_INDEX";
    public static final String ENV_IB_QPS_PER_CONNECTION = "RDMA4J_IB_QPS_PER_CONNECTION";
    public static final String ENV_IB_TIMEOUT = "RDMA4J_IB_TIMEOUT";
    public static final String ENV_IB_RETRY_CNT = "RDMA4J_IB_RETRY_CNT";
    public static final String ENV_IB_RNR_RETRY = "RDMA4J_IB_RNR_RETRY";
    public static final String ENV_IB_MTU = "RDMA4J_IB_MTU";
    public static final String ENV_IB_SL = "RDMA4J_IB_SL";
    public static final String ENV_IB_TC = "RDMA4J_IB_TC";
    public static final String ENV_SIGNAL_INTERVAL = "RDMA4J_SIGNAL_INTERVAL";
    public static final String ENV_BATCH_SIZE = "RDMA4J_BATCH_SIZE";
    public static final String ENV_IDLE_STRATEGY = "RDMA4J_IDLE_STRATEGY";
    public static final String ENV_HUGE_PAGES = "RDMA4J_HUGE_PAGES";
    public static final String ENV_PROGRESS_THREAD = "RDMA4J_PROGRESS_THREAD";
    public static final String ENV_PROGRESS_CPU = "RDMA4J_PROGRESS_CPU";
    public static final String ENV_TIMEOUT_MS = "RDMA4J_TIMEOUT_MS";
    public static final String ENV_MAX_REQUESTS = "RDMA4J_MAX_REQUESTS";
    public static final String ENV_REGISTRATION_CAP_BYTES = "RDMA4J_REGISTRATION_CAP_BYTES";
    /** {@link #registrationCapBytes()} when none is set. */
    public static final long NO_REGISTRATION_CAP = Long.MAX_VALUE;
    static final long MIN_REGISTRATION_CAP_BYTES = 4096;
    public static final String ENV_TCP_IFNAME = "RDMA4J_TCP_IFNAME";
    public static final String ENV_TCP_ADDRESS = "RDMA4J_TCP_ADDRESS";
    public static final String ENV_TCP_CONGESTION = "RDMA4J_TCP_CONGESTION";
    /** {@link #tcpCongestion()}: reno between ranks of one host, the host's default otherwise. */
    public static final String TCP_CONGESTION_AUTO = "auto";
    /** {@link #tcpCongestion()}: the host's default congestion control on every connection. */
    public static final String TCP_CONGESTION_SYSTEM = "system";
    /** Linux's TCP_CA_NAME_MAX less the terminating zero. */
    static final int TCP_CONGESTION_NAME_MAX = 15;
    public static final String ENV_SHM_DIR = "RDMA4J_SHM_DIR";

    /** Which provider {@link Transports#create} builds. */
    public enum Provider {
        /** verbs if every rank has a usable device, else shm if all ranks share a host, else tcp. */
        AUTO, VERBS, SHM, TCP;

        public static Provider parse(String s) {
            try {
                return valueOf(s.trim().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("unknown transport provider '" + s
                        + "' (expected verbs, shm, tcp or auto)");
            }
        }
    }

    private final Provider provider;
    private final String ibHca;
    private final int ibPort;
    private final int ibGidIndex;
    private final int ibQpsPerConnection;
    private final int ibTimeout;
    private final int ibRetryCount;
    private final int ibRnrRetry;
    private final int ibMtu;
    private final int ibServiceLevel;
    private final int ibTrafficClass;
    private final int signalInterval;
    private final int batchSize;
    private final IdleStrategy.Kind idleStrategy;
    private final boolean hugePages;
    private final boolean progressThread;
    private final int progressCpu;
    private final Duration timeout;
    private final int maxOutstandingRequests;
    private final long registrationCapBytes;
    private final String tcpInterface;
    private final String tcpAddress;
    private final String tcpCongestion;
    private final Path shmDir;
    private final AtomicBoolean logged = new AtomicBoolean();

    private TransportConfig(Builder b) {
        provider = b.provider;
        ibHca = b.ibHca;
        ibPort = b.ibPort;
        ibGidIndex = b.ibGidIndex;
        ibQpsPerConnection = b.ibQpsPerConnection;
        ibTimeout = b.ibTimeout;
        ibRetryCount = b.ibRetryCount;
        ibRnrRetry = b.ibRnrRetry;
        ibMtu = b.ibMtu;
        ibServiceLevel = b.ibServiceLevel;
        ibTrafficClass = b.ibTrafficClass;
        signalInterval = b.signalInterval;
        batchSize = b.batchSize;
        idleStrategy = b.idleStrategy;
        hugePages = b.hugePages;
        progressThread = b.progressThread;
        progressCpu = b.progressCpu;
        timeout = b.timeout;
        maxOutstandingRequests = b.maxOutstandingRequests;
        registrationCapBytes = b.registrationCapBytes;
        tcpInterface = b.tcpInterface;
        tcpAddress = b.tcpAddress;
        tcpCongestion = b.tcpCongestion;
        shmDir = b.shmDir;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The defaults overridden by the process environment. */
    public static TransportConfig fromEnvironment() {
        return builder().fromEnvironment().build();
    }

    /** The defaults. */
    public static TransportConfig defaults() {
        return builder().build();
    }

    public Provider provider() { return provider; }

    /** The HCA to use, {@code null} for the first usable one. */
    public String ibHca() { return ibHca; }

    public int ibPort() { return ibPort; }

    /** GID index, -1 to let the provider pick a RoCE v2 IPv4-mapped GID. */
    public int ibGidIndex() { return ibGidIndex; }

    public int ibQpsPerConnection() { return ibQpsPerConnection; }

    /** Local ACK timeout exponent (4.096 us * 2^value), as ibv_qp_attr.timeout. */
    public int ibTimeout() { return ibTimeout; }

    public int ibRetryCount() { return ibRetryCount; }

    public int ibRnrRetry() { return ibRnrRetry; }

    /** Path MTU in bytes, 0 for the port's active MTU. */
    public int ibMtu() { return ibMtu; }

    public int ibServiceLevel() { return ibServiceLevel; }

    public int ibTrafficClass() { return ibTrafficClass; }

    public int signalInterval() { return signalInterval; }

    public int batchSize() { return batchSize; }

    public IdleStrategy.Kind idleStrategy() { return idleStrategy; }

    /** A fresh idle strategy of the configured kind (one per polling thread). */
    public IdleStrategy newIdleStrategy() { return idleStrategy.newInstance(); }

    /** The idle strategy for one of {@code pollersOnHost} processes polling on this host at once. */
    public IdleStrategy newIdleStrategy(int pollersOnHost) {
        return newIdleStrategy(pollersOnHost, false);
    }

    /**
     * The same, when the caller knows whether those processes are bound to CPUs of their own
     * ({@link IdleStrategy.Kind#newInstance(int, boolean)}).
     */
    public IdleStrategy newIdleStrategy(int pollersOnHost, boolean eachOnOwnCpus) {
        String warning = idleStrategy.warning(pollersOnHost, eachOnOwnCpus);
        if (warning != null) {
            LOG.log(Level.WARNING, warning);
        }
        return idleStrategy.newInstance(pollersOnHost, eachOnOwnCpus);
    }

    public boolean hugePages() { return hugePages; }

    /** Whether the provider runs a busy-polling completion thread (verbs). */
    public boolean progressThread() { return progressThread; }

    /** The CPU the completion thread is pinned to, -1 for none. */
    public int progressCpu() { return progressCpu; }

    /** Connection and operation timeout. */
    public Duration timeout() { return timeout; }

    public long timeoutNanos() { return timeout.toNanos(); }

    public int maxOutstandingRequests() { return maxOutstandingRequests; }

    /**
     * Bytes of caller memory the verbs provider keeps registered (so pinned) at most, or
     * {@link #NO_REGISTRATION_CAP}; beyond it, registering more first releases the least recently
     * used registrations that no pending request uses and whose remote descriptor no peer was
     * given.
     */
    public long registrationCapBytes() { return registrationCapBytes; }

    /** Interface the TCP provider listens on, {@code null} to pick one. */
    public String tcpInterface() { return tcpInterface; }

    /** Address the TCP provider listens on, {@code null} to derive it from the interface. */
    public String tcpAddress() { return tcpAddress; }

    /**
     * The congestion control of the TCP provider's connections: {@link #TCP_CONGESTION_AUTO},
     * {@link #TCP_CONGESTION_SYSTEM} or the name of a Linux congestion control algorithm.
     */
    public String tcpCongestion() { return tcpCongestion; }

    public Path shmDir() { return shmDir; }

    /** Logs this configuration at debug level, once per instance however often it is called. */
    public void logOnce() {
        if (logged.compareAndSet(false, true)) {
            LOG.log(Level.DEBUG, "rdma4j transport configuration: {0}", this);
        }
    }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.provider = provider;
        b.ibHca = ibHca;
        b.ibPort = ibPort;
        b.ibGidIndex = ibGidIndex;
        b.ibQpsPerConnection = ibQpsPerConnection;
        b.ibTimeout = ibTimeout;
        b.ibRetryCount = ibRetryCount;
        b.ibRnrRetry = ibRnrRetry;
        b.ibMtu = ibMtu;
        b.ibServiceLevel = ibServiceLevel;
        b.ibTrafficClass = ibTrafficClass;
        b.signalInterval = signalInterval;
        b.batchSize = batchSize;
        b.idleStrategy = idleStrategy;
        b.hugePages = hugePages;
        b.progressThread = progressThread;
        b.progressCpu = progressCpu;
        b.timeout = timeout;
        b.maxOutstandingRequests = maxOutstandingRequests;
        b.registrationCapBytes = registrationCapBytes;
        b.tcpInterface = tcpInterface;
        b.tcpAddress = tcpAddress;
        b.tcpCongestion = tcpCongestion;
        b.shmDir = shmDir;
        return b;
    }

    @Override
    public String toString() {
        return "TransportConfig{provider=" + provider.name().toLowerCase(Locale.ROOT)
                + ", ibHca=" + (ibHca == null ? "<first usable>" : ibHca)
                + ", ibPort=" + ibPort + ", ibGidIndex=" + ibGidIndex
                + ", ibQpsPerConnection=" + ibQpsPerConnection + ", ibTimeout=" + ibTimeout
                + ", ibRetryCount=" + ibRetryCount + ", ibRnrRetry=" + ibRnrRetry
                + ", ibMtu=" + (ibMtu == 0 ? "<port active>" : ibMtu)
                + ", ibServiceLevel=" + ibServiceLevel + ", ibTrafficClass=" + ibTrafficClass
                + ", signalInterval=" + signalInterval + ", batchSize=" + batchSize
                + ", idleStrategy=" + idleStrategy.configName() + ", hugePages=" + hugePages
                + ", progressThread=" + progressThread + ", progressCpu=" + progressCpu
                + ", timeoutMs=" + timeout.toMillis()
                + ", maxOutstandingRequests=" + maxOutstandingRequests
                + ", registrationCapBytes=" + (registrationCapBytes == NO_REGISTRATION_CAP ? "<none>" : registrationCapBytes)
                + ", tcpInterface=" + (tcpInterface == null ? "<auto>" : tcpInterface)
                + ", tcpAddress=" + (tcpAddress == null ? "<auto>" : tcpAddress)
                + ", tcpCongestion=" + tcpCongestion
                + ", shmDir=" + shmDir + '}';
    }

    /** Mutable builder; {@link #build()} validates. */
    public static final class Builder {
        private Provider provider = Provider.AUTO;
        private String ibHca;
        private int ibPort = 1;
        private int ibGidIndex = -1;
        private int ibQpsPerConnection = 1;
        private int ibTimeout = 18;
        private int ibRetryCount = 7;
        private int ibRnrRetry = 7;
        private int ibMtu = 0;
        private int ibServiceLevel = 0;
        private int ibTrafficClass = 0;
        private int signalInterval = 16;
        private int batchSize = 32;
        private IdleStrategy.Kind idleStrategy = IdleStrategy.Kind.BACKOFF;
        private boolean hugePages;
        private boolean progressThread;
        private int progressCpu = -1;
        private Duration timeout = Duration.ofSeconds(60);
        private int maxOutstandingRequests = 4096;
        private long registrationCapBytes = NO_REGISTRATION_CAP;
        private String tcpInterface;
        private String tcpAddress;
        private String tcpCongestion = TCP_CONGESTION_AUTO;
        private Path shmDir = Path.of("/dev/shm");

        private Builder() {
        }

        /** Applies every RDMA4J_* variable set in the process environment. */
        public Builder fromEnvironment() {
            return fromEnvironment(System.getenv());
        }

        /** Applies every RDMA4J_* variable of {@code env}; a bad value names its variable. */
        public Builder fromEnvironment(Map<String, String> env) {
            env(env, ENV_TRANSPORT, v -> provider(Provider.parse(v)));
            env(env, ENV_IB_HCA, this::ibHca);
            env(env, ENV_IB_PORT, v -> ibPort(parseInt(v)));
            env(env, ENV_IB_GID_INDEX, v -> ibGidIndex(parseInt(v)));
            env(env, ENV_IB_QPS_PER_CONNECTION, v -> ibQpsPerConnection(parseInt(v)));
            env(env, ENV_IB_TIMEOUT, v -> ibTimeout(parseInt(v)));
            env(env, ENV_IB_RETRY_CNT, v -> ibRetryCount(parseInt(v)));
            env(env, ENV_IB_RNR_RETRY, v -> ibRnrRetry(parseInt(v)));
            env(env, ENV_IB_MTU, v -> ibMtu(parseInt(v)));
            env(env, ENV_IB_SL, v -> ibServiceLevel(parseInt(v)));
            env(env, ENV_IB_TC, v -> ibTrafficClass(parseInt(v)));
            env(env, ENV_SIGNAL_INTERVAL, v -> signalInterval(parseInt(v)));
            env(env, ENV_BATCH_SIZE, v -> batchSize(parseInt(v)));
            env(env, ENV_IDLE_STRATEGY, v -> idleStrategy(IdleStrategy.Kind.parse(v)));
            env(env, ENV_HUGE_PAGES, v -> hugePages(parseBoolean(v)));
            env(env, ENV_PROGRESS_THREAD, v -> progressThread(parseBoolean(v)));
            env(env, ENV_PROGRESS_CPU, v -> progressCpu(parseInt(v)));
            env(env, ENV_TIMEOUT_MS, v -> timeout(Duration.ofMillis(parseLong(v))));
            env(env, ENV_MAX_REQUESTS, v -> maxOutstandingRequests(parseInt(v)));
            env(env, ENV_REGISTRATION_CAP_BYTES, v -> registrationCapBytes(parseLong(v)));
            env(env, ENV_TCP_IFNAME, this::tcpInterface);
            env(env, ENV_TCP_ADDRESS, this::tcpAddress);
            env(env, ENV_TCP_CONGESTION, this::tcpCongestion);
            env(env, ENV_SHM_DIR, v -> shmDir(Path.of(v)));
            return this;
        }

        private static void env(Map<String, String> env, String name, Consumer<String> apply) {
            String v = env.get(name);
            if (v == null || v.isBlank()) {
                return;
            }
            try {
                apply.accept(v.trim());
            } catch (RuntimeException e) {
                throw new IllegalArgumentException(name + "=" + v + ": " + e.getMessage(), e);
            }
        }

        private static int parseInt(String v) {
            try {
                return Integer.parseInt(v);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("not an integer");
            }
        }

        private static long parseLong(String v) {
            try {
                return Long.parseLong(v);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("not an integer");
            }
        }

        private static boolean parseBoolean(String v) {
            return switch (v.toLowerCase(Locale.ROOT)) {
                case "1", "true", "yes", "on" -> true;
                case "0", "false", "no", "off" -> false;
                default -> throw new IllegalArgumentException("not a boolean (1/true/yes/on or 0/false/no/off)");
            };
        }

        public Builder provider(Provider p) { provider = p; return this; }

        public Builder ibHca(String v) { ibHca = v == null || v.isBlank() ? null : v; return this; }

        public Builder ibPort(int v) { ibPort = v; return this; }

        public Builder ibGidIndex(int v) { ibGidIndex = v; return this; }

        public Builder ibQpsPerConnection(int v) { ibQpsPerConnection = v; return this; }

        public Builder ibTimeout(int v) { ibTimeout = v; return this; }

        public Builder ibRetryCount(int v) { ibRetryCount = v; return this; }

        public Builder ibRnrRetry(int v) { ibRnrRetry = v; return this; }

        public Builder ibMtu(int v) { ibMtu = v; return this; }

        public Builder ibServiceLevel(int v) { ibServiceLevel = v; return this; }

        public Builder ibTrafficClass(int v) { ibTrafficClass = v; return this; }

        public Builder signalInterval(int v) { signalInterval = v; return this; }

        public Builder batchSize(int v) { batchSize = v; return this; }

        public Builder idleStrategy(IdleStrategy.Kind v) { idleStrategy = v; return this; }

        public Builder hugePages(boolean v) { hugePages = v; return this; }

        public Builder progressThread(boolean v) { progressThread = v; return this; }

        public Builder progressCpu(int v) { progressCpu = v; return this; }

        public Builder timeout(Duration v) { timeout = v; return this; }

        public Builder maxOutstandingRequests(int v) { maxOutstandingRequests = v; return this; }

        public Builder registrationCapBytes(long v) { registrationCapBytes = v; return this; }

        public Builder tcpInterface(String v) { tcpInterface = v == null || v.isBlank() ? null : v; return this; }

        public Builder tcpAddress(String v) { tcpAddress = v == null || v.isBlank() ? null : v; return this; }

        public Builder tcpCongestion(String v) { tcpCongestion = v; return this; }

        public Builder shmDir(Path v) { shmDir = v; return this; }

        public TransportConfig build() {
            require(provider != null, "provider must not be null");
            range("ibPort (" + ENV_IB_PORT + ")", ibPort, 1, 255);
            range("ibGidIndex (" + ENV_IB_GID_INDEX + ")", ibGidIndex, -1, 255);
            range("ibQpsPerConnection (" + ENV_IB_QPS_PER_CONNECTION + ")", ibQpsPerConnection, 1, 128);
            range("ibTimeout (" + ENV_IB_TIMEOUT + ")", ibTimeout, 1, 31);
            range("ibRetryCount (" + ENV_IB_RETRY_CNT + ")", ibRetryCount, 0, 7);
            range("ibRnrRetry (" + ENV_IB_RNR_RETRY + ")", ibRnrRetry, 0, 7);
            require(ibMtu == 0 || ibMtu == 256 || ibMtu == 512 || ibMtu == 1024 || ibMtu == 2048
                    || ibMtu == 4096, "ibMtu (" + ENV_IB_MTU + ") must be 0, 256, 512, 1024, 2048 or 4096, was " + ibMtu);
            range("ibServiceLevel (" + ENV_IB_SL + ")", ibServiceLevel, 0, 15);
            range("ibTrafficClass (" + ENV_IB_TC + ")", ibTrafficClass, 0, 255);
            range("signalInterval (" + ENV_SIGNAL_INTERVAL + ")", signalInterval, 1, 1 << 16);
            range("batchSize (" + ENV_BATCH_SIZE + ")", batchSize, 1, 1 << 16);
            require(idleStrategy != null, "idleStrategy must not be null");
            range("progressCpu (" + ENV_PROGRESS_CPU + ")", progressCpu, -1, 1 << 16);
            require(timeout != null && !timeout.isNegative() && !timeout.isZero() && timeout.compareTo(MAX_TIMEOUT) <= 0,
                    "timeout (" + ENV_TIMEOUT_MS + ") must be positive and at most " + MAX_TIMEOUT.toMillis() + " ms, was "
                            + timeout);
            range("maxOutstandingRequests (" + ENV_MAX_REQUESTS + ")", maxOutstandingRequests, 1, MAX_OUTSTANDING_REQUESTS);
            require(registrationCapBytes >= MIN_REGISTRATION_CAP_BYTES, "registrationCapBytes (" + ENV_REGISTRATION_CAP_BYTES
                    + ") must be at least " + MIN_REGISTRATION_CAP_BYTES + " (one page), was " + registrationCapBytes);
            require(tcpCongestion != null && tcpCongestion.matches("[A-Za-z0-9_-]{1," + TCP_CONGESTION_NAME_MAX + "}"),
                    "tcpCongestion (" + ENV_TCP_CONGESTION + ") must be " + TCP_CONGESTION_AUTO + ", " + TCP_CONGESTION_SYSTEM
                            + " or an algorithm's name (letters, digits, '_' or '-', at most " + TCP_CONGESTION_NAME_MAX
                            + "), was " + tcpCongestion);
            require(shmDir != null, "shmDir must not be null");
            return new TransportConfig(this);
        }

        private static void range(String name, int v, int min, int max) {
            require(v >= min && v <= max, name + " must be in [" + min + ", " + max + "], was " + v);
        }

        private static void require(boolean ok, String message) {
            if (!ok) {
                throw new IllegalArgumentException(message);
            }
        }
    }
}
