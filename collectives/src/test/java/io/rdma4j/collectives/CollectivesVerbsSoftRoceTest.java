package io.rdma4j.collectives;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import io.rdma4j.verbs.testing.SoftRoce;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every collective over the verbs provider, ranks in separate JVMs, against the same independent
 * reference as the TCP and shared-memory runs. Needs a verbs device, so it runs in the Soft-RoCE
 * guest (scripts/softroce-test); every rank uses the first device, rxe0, whose loopback connects
 * the QPs of each pair.
 */
@Tag(SoftRoce.TAG)
class CollectivesVerbsSoftRoceTest {
    /** The emulated guest runs the JVMs 10-50x slower than the host. */
    private static final Duration GUEST_LIMIT = Duration.ofMinutes(10);

    @BeforeAll
    static void requireDevice() {
        SoftRoce.requireDeviceOrSkip();
    }

    @Test
    void twoRanksEveryCollectiveTypeAndOp() throws Exception {
        MultiProcessHarness.run(2, "verbs", Map.of(), GUEST_LIMIT, "full");
    }

    @Test
    void threeRanksReducedMatrixAndSplit() throws Exception {
        MultiProcessHarness.run(3, "verbs", Map.of(), GUEST_LIMIT, "reduced", "split");
    }

    @Test
    void mismatchedCountDetectedOnEveryRank() throws Exception {
        MultiProcessHarness.expectFault(2, "verbs", Map.of("RDMA4J_TIMEOUT_MS", "30000"), GUEST_LIMIT, "mismatch-count");
    }

    @Test
    void deadRankNamedOnEveryRank() throws Exception {
        MultiProcessHarness.expectFault(3, "verbs", Map.of("RDMA4J_TIMEOUT_MS", "30000"), GUEST_LIMIT, "death");
    }

    @Test
    void theStoreHostsDeathIsNamedOnEveryRank() throws Exception {
        StoreHostDeathTest.run("verbs", Duration.ofMinutes(3));
    }

    /**
     * 1,000 allreduces, each on memory allocated for it at a changing size and place, kept alive
     * for 20 calls and then freed, under a registration cap of 256 KiB per rank (the 20 live
     * buffers hold about 1.3 MiB): every result is right (a stale key at a reused address would
     * move the old pages' data), the process's pinned memory (VmPin; both ranks live in this JVM)
     * never grows past what the ranks had pinned before the loop by more than twice the cap plus
     * 512 KiB for pool blocks allocated on the way, and it returns to where it was once the
     * transports closed.
     */
    @Test
    void allReducesOnFreshMemoryStayWithinTheRegistrationCap() throws Exception {
        long cap = 256 << 10;
        int calls = 1000;
        int liveCalls = 20;
        long pinBefore = SoftRoce.vmPinKiB();
        long[] pinStart = new long[1];
        long[] pinPeak = new long[1];
        Set<Long> addresses = ConcurrentHashMap.newKeySet();
        int[] reused = new int[1];
        TransportConfig config = LocalGroup.config(TransportConfig.Provider.VERBS).toBuilder()
                .registrationCapBytes(cap).timeout(Duration.ofSeconds(60)).build();
        try (LocalGroup g = LocalGroup.start(2, config)) {
            g.run(Duration.ofMinutes(8), (rank, t, store) -> {
                try (Communicator c = Communicator.builder().transport(t).store(store)
                        .options(CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(60))).build()) {
                    c.barrier();
                    if (rank == 0) {
                        pinStart[0] = SoftRoce.vmPinKiB();
                    }
                    c.barrier();
                    Arena[] live = new Arena[liveCalls];
                    try {
                        for (int i = 0; i < calls; i++) {
                            int slot = i % liveCalls;
                            if (live[slot] != null) {
                                live[slot].close();
                            }
                            live[slot] = Arena.ofShared();
                            int count = 4096 * (1 + i % 7);
                            long shift = 64L * (i % 5);
                            MemorySegment mem = live[slot].allocate(4L * count + shift, 64).asSlice(shift, 4L * count);
                            if (rank == 0 && !addresses.add(mem.address())) {
                                reused[0]++;
                            }
                            for (int k = 0; k < count; k++) {
                                mem.setAtIndex(ValueLayout.JAVA_FLOAT, k, rank + 1 + (k + i) % 3);
                            }
                            c.allReduce(mem, DataType.F32, ReduceOp.SUM);
                            for (int k = 0; k < count; k++) {
                                float want = 3 + 2 * ((k + i) % 3);
                                float got = mem.getAtIndex(ValueLayout.JAVA_FLOAT, k);
                                if (got != want) {
                                    throw new AssertionError("rank " + rank + " call " + i + ": element " + k + " is "
                                            + got + ", expected " + want);
                                }
                            }
                            if (rank == 0 && i % 50 == 49) {
                                pinPeak[0] = Math.max(pinPeak[0], SoftRoce.vmPinKiB());
                            }
                        }
                    } finally {
                        for (Arena a : live) {
                            if (a != null) {
                                a.close();
                            }
                        }
                    }
                    c.barrier();
                }
            });
        }
        long pinAfter = SoftRoce.vmPinKiB();
        System.out.printf("VmPin: %d kB before, %d kB before the loop, peak %d kB, %d kB after close; "
                + "%d calls at a reused address%n", pinBefore, pinStart[0], pinPeak[0], pinAfter, reused[0]);
        assertTrue(pinPeak[0] <= pinStart[0] + 2 * cap / 1024 + 512, "VmPin peaked at " + pinPeak[0]
                + " kB, from " + pinStart[0] + " kB before the loop, with a cap of " + cap / 1024 + " kB per rank");
        assertTrue(reused[0] > 0, "no address was reused, so stale keys were not put to the test");
        assertEquals(pinBefore, pinAfter, "VmPin after the transports closed");
    }

    /**
     * A world of verbs transports built again on the store of the one before, connecting lazily,
     * rank 1 a second late: rank 0's transport must meet rank 1's new one, not the endpoint its
     * old transport left in the store.
     */
    @Test
    void aWorldBuiltAgainOnItsStoreConnectsToTheNewTransports() throws Exception {
        TransportConfig config = LocalGroup.config(TransportConfig.Provider.VERBS);
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(GUEST_LIMIT, (rank, t, store) -> {
                for (int round = 0; round < 2; round++) {
                    try (Communicator w = Communicator.builder().rank(rank).size(2).transportConfig(config)
                            .store(store.scoped("again/")).autoLocalTransport(false).eagerConnect(false)
                            .options(CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(60))).build()) {
                        if (round == 1 && rank == 1) {
                            Thread.sleep(1000);
                        }
                        float[] f = {rank + 1 + round};
                        w.allReduce(f, ReduceOp.SUM);
                        assertEquals(3 + 2 * round, f[0], "round " + round);
                    }
                }
            });
        }
    }
}
