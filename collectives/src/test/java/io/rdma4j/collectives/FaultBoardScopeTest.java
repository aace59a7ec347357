package io.rdma4j.collectives;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A fault posted on the board belongs to one communicator: not to another group that took the
 * same context id, nor to a world built later on the same store. Each test stalls a healthy
 * communicator long enough (1.5 s) for its ranks to read the board while they wait.
 */
class FaultBoardScopeTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(8);

    /**
     * Nested splits of disjoint parents ({0, 1} and {2, 3}) take the same context id; ranks 2 and
     * 3 abort theirs while rank 1 waits in a barrier of its own for rank 0.
     */
    @Test
    void disjointGroupsWithOneContextIdKeepTheirFaultsApart() throws Exception {
        CountDownLatch aborted = new CountDownLatch(2);
        try (LocalGroup g = LocalGroup.start(4, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                try (Communicator world = Communicator.builder().transport(t).store(store)
                        .options(CollectiveOptions.defaults().withTimeout(TIMEOUT)).build();
                     Communicator half = world.split(rank / 2, rank);
                     Communicator sub = half.split(0, rank)) {
                    assertEquals(2, sub.size());
                    if (rank >= 2) {
                        sub.abort();
                        aborted.countDown();
                    } else {
                        aborted.await();
                        if (rank == 0) {
                            Thread.sleep(1500);
                        }
                        sub.barrier();
                    }
                }
            });
        }
    }

    /** A world aborted on a store, then a new world of the same ranks on that store. */
    @Test
    void aWorldBuiltAgainOnItsStoreDoesNotReadTheFaultsOfTheOneBefore() throws Exception {
        roundsOnOneStore(2, (rank, round, worlds) -> {
            try (Communicator w = worlds.build(rank, 2)) {
                if (round == 0) {
                    w.barrier();
                    if (rank == 1) {
                        w.abort();
                    }
                } else {
                    if (rank == 0) {
                        Thread.sleep(1500);
                    }
                    w.barrier();
                }
            }
        });
    }

    /**
     * Between two worlds of both ranks, rank 0 alone builds a world of one on the same store: the
     * ranks' counts of worlds differ, their counts of worlds of two do not, and the second world
     * of two comes up.
     */
    @Test
    void aWorldOfAnotherSizeInBetweenLeavesTheRanksInStep() throws Exception {
        roundsOnOneStore(3, (rank, round, worlds) -> {
            boolean alone = round == 1;
            if (alone && rank != 0) {
                return;
            }
            try (Communicator w = worlds.build(alone ? 0 : rank, alone ? 1 : 2)) {
                float[] f = {rank + 1};
                w.allReduce(f, ReduceOp.SUM);
                assertEquals(alone ? 1f : 3f, f[0], "round " + round);
            }
        });
    }

    /** What a rank does in one round of {@link #roundsOnOneStore}. */
    private interface Round {
        void run(int rank, int round, Worlds worlds) throws Exception;
    }

    /** Builds a world that creates its own transport on the rounds' store, as a job that builds one again does. */
    private interface Worlds {
        Communicator build(int rank, int size);
    }

    /** Two ranks run {@code rounds} rounds each, every world of them on one store. */
    private static void roundsOnOneStore(int rounds, Round round) throws Exception {
        TransportConfig config = LocalGroup.config(TransportConfig.Provider.TCP);
        try (LocalGroup g = LocalGroup.start(2, config)) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                Store worldsStore = store.scoped("worlds/");
                Worlds worlds = (r, size) -> Communicator.builder().rank(r).size(size).transportConfig(config)
                        .store(worldsStore).autoLocalTransport(false)
                        .options(CollectiveOptions.defaults().withTimeout(TIMEOUT)).build();
                for (int n = 0; n < rounds; n++) {
                    round.run(rank, n, worlds);
                }
            });
        }
    }
}
