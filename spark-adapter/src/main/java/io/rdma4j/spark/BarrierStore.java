package io.rdma4j.spark;

import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.bootstrap.TcpStore;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;

/**
 * The bootstrap {@link Store} of a barrier stage (Spark's barrier execution mode, where all
 * tasks of the stage run at once): task 0 starts a {@link TcpStore} server on its executor,
 * everyone learns its address and a fresh job token through one {@code allGather}, and every
 * task connects. Then, in each task:
 *
 * <pre>
 * SparkBarrierGroup group = SparkBarrierGroup.current();
 * try (Store store = BarrierStore.create(group);
 *      Communicator comm = Communicator.builder().rank(group.rank()).size(group.size()).store(store).build()) {
 *     comm.allReduce(gradients, ReduceOp.AVG);
 * }
 * </pre>
 *
 * <p>{@link #close()} is a barrier first: task 0 hosts the server, so it must not stop it while
 * another task may still use the store. If task 0 cannot start the server, every task fails
 * with task 0's reason (instead of waiting for an address that never comes).
 *
 * <p>The token travels in the barrier messages (through Spark's driver): it keeps stray
 * connections out of the store; Spark's own authentication (spark.authenticate) protects the
 * messages themselves.
 */
public final class BarrierStore implements Store {
    private static final String FAILED = "failed ";

    private final BarrierGroup group;
    private final TcpStore store;
    private boolean closed;

    private BarrierStore(BarrierGroup group, TcpStore store) {
        this.group = group;
        this.store = store;
    }

    /** A store for {@code group}, waiting up to 60 s for its server. Collective: every task calls it. */
    public static BarrierStore create(BarrierGroup group) {
        return create(group, Duration.ofSeconds(60));
    }

    /** Collective: every task of the group calls it. */
    public static BarrierStore create(BarrierGroup group, Duration timeout) {
        TcpStore own = null;
        RuntimeException ownFailure = null;
        String announce = "";
        if (group.rank() == 0) {
            String host = group.host();
            String token = HexFormat.of().formatHex(new SecureRandom().generateSeed(16));
            try {
                own = TcpStore.builder().address(host).port(0).hostServer(true).token(token).timeout(timeout).build();
                announce = host + " " + own.port() + " " + token;
            } catch (RuntimeException e) {
                // the others must hear why instead of waiting for an address
                announce = FAILED + e;
                ownFailure = e;
            }
        }
        String[] all;
        try {
            all = group.allGather(announce);
        } catch (RuntimeException e) {
            if (own != null) {
                own.close();
            }
            throw e;
        }
        String first = all[0];
        if (first.startsWith(FAILED)) {
            // task 0 keeps the failure itself as the cause: its stack trace is where it happened
            throw new IllegalStateException("task 0 of the barrier stage could not start the rdma4j store: "
                    + first.substring(FAILED.length()), ownFailure);
        }
        if (own != null) {
            return new BarrierStore(group, own);
        }
        String[] parts = first.split(" ");
        if (parts.length != 3) {
            throw new IllegalStateException("task 0 announced '" + first + "', not 'host port token'");
        }
        TcpStore client = TcpStore.builder().address(parts[0]).port(Integer.parseInt(parts[1])).token(parts[2])
                .timeout(timeout).build();
        return new BarrierStore(group, client);
    }

    @Override
    public void set(String key, byte[] value) {
        store.set(key, value);
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        return store.get(key, timeout);
    }

    @Override
    public long add(String key, long delta) {
        return store.add(key, delta);
    }

    @Override
    public boolean delete(String key) {
        return store.delete(key);
    }

    /** Waits for every task to be done with the store (a barrier), then disconnects. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            group.barrier();
        } finally {
            store.close();
        }
    }

    @Override
    public String toString() {
        return "BarrierStore[task " + group.rank() + " of " + group.size() + ", " + store + "]";
    }
}
