package io.rdma4j.transport;

import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.shm.ShmTransport;
import io.rdma4j.transport.tcp.TcpTransport;
import io.rdma4j.transport.verbs.VerbsTransport;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Builds the transport a configuration asks for. With {@link TransportConfig.Provider#AUTO}
 * every rank publishes what it can do (whether a verbs device is usable, and which host it is
 * on) through the store and reads everyone else's, so all ranks make the same choice: verbs if
 * every rank has a usable device, else shared memory if all ranks share one host, else TCP.
 */
public final class Transports {
    private static final System.Logger LOG = System.getLogger(Transports.class.getName());
    private static final String CAPABILITY_KEY = "rdma4j/transport/capability/";

    private Transports() {
    }

    public static Transport create(TransportConfig config, Store store, int rank, int size) {
        if (size < 1 || rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " outside a group of size " + size);
        }
        config.logOnce();
        TransportConfig.Provider provider = config.provider();
        if (provider == TransportConfig.Provider.AUTO) {
            provider = choose(config, store, rank, size);
            LOG.log(Level.DEBUG, "rank {0} of {1}: automatic transport choice is {2}", rank, size, provider);
        }
        return switch (provider) {
            case TCP -> new TcpTransport(config, store, rank, size);
            case SHM -> new ShmTransport(config, store, rank, size);
            case VERBS -> createVerbs(config, store, rank, size);
            case AUTO -> throw new IllegalStateException("unreachable");
        };
    }

    /** The provider every rank of the group agrees on (all ranks must call this). */
    static TransportConfig.Provider choose(TransportConfig config, Store store, int rank, int size) {
        String mine = (verbsUsable(config) ? "verbs " : "noverbs ") + hostIdentity();
        store.set(CAPABILITY_KEY + rank, mine.getBytes(StandardCharsets.UTF_8));
        boolean allVerbs = true;
        boolean oneHost = true;
        String host = mine.substring(mine.indexOf(' ') + 1);
        for (int r = 0; r < size; r++) {
            String theirs = r == rank ? mine : capabilityOf(store, r, config);
            allVerbs &= theirs.startsWith("verbs ");
            oneHost &= theirs.substring(theirs.indexOf(' ') + 1).equals(host);
        }
        return allVerbs ? TransportConfig.Provider.VERBS
                : oneHost ? TransportConfig.Provider.SHM : TransportConfig.Provider.TCP;
    }

    private static String capabilityOf(Store store, int r, TransportConfig config) {
        try {
            return new String(store.get(CAPABILITY_KEY + r, config.timeout()), StandardCharsets.UTF_8);
        } catch (TransportTimeoutException e) {
            throw new TransportTimeoutException(r, "rank " + r + " did not say which transports it can use within "
                    + config.timeout().toMillis() + " ms (has it started?): " + e.getMessage());
        }
    }

    /**
     * Whether this process can use an RDMA device as configured: a device (RDMA4J_IB_HCA or the
     * first), its port active, and an address to be reached at. Never throws.
     */
    static boolean verbsUsable(TransportConfig config) {
        return VerbsTransport.usable(config);
    }

    /** The verbs provider; without a usable device it fails with a TransportException saying what is missing. */
    private static Transport createVerbs(TransportConfig config, Store store, int rank, int size) {
        return new VerbsTransport(config, store, rank, size);
    }

    /**
     * Which machine this process runs on, as far as shared memory goes: the host name plus what
     * the shared-memory provider requires its peers to share, the kernel's boot id and the pid
     * namespace. Containers on one host that share its host name (Kubernetes
     * pods with hostNetwork, {@code docker --uts=host}) but not its pid namespace get TCP, not a
     * shared-memory provider that would refuse every connection between them.
     */
    static String hostIdentity() {
        String name;
        try {
            name = Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
        } catch (IOException | RuntimeException e) {
            try {
                name = InetAddress.getLocalHost().getHostName();
            } catch (IOException unknown) {
                name = "unknown-host";
            }
        }
        return name + "/" + ShmTransport.sharedMemoryIdentity();
    }
}
