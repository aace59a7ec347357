package io.rdma4j.spark;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The store's bootstrap protocol with a group of threads standing in for a barrier stage (the
 * Spark test covers the real BarrierTaskContext): failure propagation and address parsing.
 */
@Timeout(60)
class BarrierStoreTest {

    /** A barrier stage of threads: all-gather through a shared array and a cyclic barrier. */
    static final class ThreadGroup {
        final int size;
        final String[] slots;
        final CyclicBarrier barrier;

        ThreadGroup(int size) {
            this.size = size;
            this.slots = new String[size];
            this.barrier = new CyclicBarrier(size);
        }

        BarrierGroup member(int rank, String host) {
            return new BarrierGroup() {
                @Override
                public int rank() {
                    return rank;
                }

                @Override
                public int size() {
                    return size;
                }

                @Override
                public String[] allGather(String message) {
                    slots[rank] = message;
                    await();
                    String[] copy = slots.clone();
                    await(); // nobody overwrites a slot before all have copied
                    return copy;
                }

                @Override
                public void barrier() {
                    await();
                }

                @Override
                public String host() {
                    return host;
                }

                private void await() {
                    try {
                        barrier.await(30, TimeUnit.SECONDS);
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }
            };
        }
    }

    private static List<Future<String>> runAll(int n, String host0, java.util.function.Function<BarrierGroup, String> body) {
        ThreadGroup g = new ThreadGroup(n);
        ExecutorService pool = Executors.newFixedThreadPool(n);
        List<Future<String>> results = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            BarrierGroup m = g.member(r, r == 0 ? host0 : "127.0.0.1");
            results.add(pool.submit(() -> body.apply(m)));
        }
        pool.shutdown();
        return results;
    }

    @Test
    void everyTaskReachesTaskZerosStoreAndCloseWaitsForAll() throws Exception {
        List<Future<String>> results = runAll(3, "127.0.0.1", g -> {
            try (BarrierStore s = BarrierStore.create(g, Duration.ofSeconds(10))) {
                s.set("from-" + g.rank(), ("hello " + g.rank()).getBytes(StandardCharsets.UTF_8));
                long arrived = s.add("arrived", 1);
                String next = new String(s.get("from-" + (g.rank() + 1) % g.size(), Duration.ofSeconds(10)),
                        StandardCharsets.UTF_8);
                // task 0 closes (stopping the server) only once every task is in close()
                return next + " arrived<=" + (arrived <= g.size());
            }
        });
        assertEquals("hello 1 arrived<=true", results.get(0).get(30, TimeUnit.SECONDS));
        assertEquals("hello 2 arrived<=true", results.get(1).get(30, TimeUnit.SECONDS));
        assertEquals("hello 0 arrived<=true", results.get(2).get(30, TimeUnit.SECONDS));
    }

    @Test
    void whenTaskZeroCannotStartTheStoreEveryTaskFailsWithItsReason() throws Exception {
        // an address that cannot resolve: task 0's own client cannot connect, so it announces the failure
        List<Future<String>> results = runAll(3, "no-such-host.invalid", g -> {
            try (BarrierStore s = BarrierStore.create(g, Duration.ofSeconds(2))) {
                return "unexpectedly connected: " + s;
            } catch (IllegalStateException e) {
                // task 0 keeps its own failure as the cause; the others only heard of it
                return e.getMessage() + " | cause " + (e.getCause() != null);
            }
        });
        for (int task = 0; task < 3; task++) {
            String msg = results.get(task).get(30, TimeUnit.SECONDS);
            assertTrue(msg.startsWith("task 0 of the barrier stage could not start the rdma4j store"), msg);
            assertTrue(msg.contains("no-such-host.invalid"), msg);
            assertTrue(msg.endsWith(" | cause " + (task == 0)), "task " + task + ": " + msg);
        }
    }

    @Test
    void executorAddressesAreParsed() {
        assertEquals("10.1.2.3", SparkBarrierGroup.hostOf("10.1.2.3:40123"));
        assertEquals("exec-7.cluster.local", SparkBarrierGroup.hostOf("exec-7.cluster.local:40123"));
        assertEquals("fe80::1", SparkBarrierGroup.hostOf("[fe80::1]:40123"));
        assertEquals("fe80::1", SparkBarrierGroup.hostOf("fe80::1"));
        assertEquals("host", SparkBarrierGroup.hostOf("host"));
    }
}
