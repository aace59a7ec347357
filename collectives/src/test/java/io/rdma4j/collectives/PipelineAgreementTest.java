package io.rdma4j.collectives;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Ranks built with different pipeline options all pipeline as rank 0 does. */
class PipelineAgreementTest {

    @Test
    void ranksWithTheirOwnChunkSizesAndWindowsTakeRankZeros() throws Exception {
        int[] chunk = {64 << 10, 256 << 10};
        int[] window = {2, 4};
        long count = 1 << 18; // 1 MiB of floats: several chunks of either size
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                try (Communicator c = Communicator.builder().transport(t).store(store)
                        .options(CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(20))
                                .withChunkBytes(chunk[rank]).withWindow(window[rank]).withAlgorithm(Algorithm.RING))
                        .build();
                     Arena arena = Arena.ofShared()) {
                    assertEquals(chunk[0], c.options().chunkBytes());
                    assertEquals(window[0], c.options().window());
                    MemorySegment data = arena.allocate(count * 4, 4);
                    for (long i = 0; i < count; i++) {
                        data.setAtIndex(ValueLayout.JAVA_FLOAT, i, (rank + 1) * (i % 1000));
                    }
                    c.allReduce(data, data, count, DataType.F32, ReduceOp.SUM);
                    for (long i = 0; i < count; i++) {
                        assertEquals(3f * (i % 1000), data.getAtIndex(ValueLayout.JAVA_FLOAT, i), "element " + i);
                    }
                }
            });
        }
    }

    /**
     * RDMA4J_ALGO set on one host only (or to another algorithm): every rank runs rank 0's choice,
     * where the call's descriptors used to disagree and fail it on every rank.
     */
    @Test
    void ranksThatForceDifferentAlgorithmsRunRankZerosChoice() throws Exception {
        Algorithm[][] forced = {{Algorithm.RING, Algorithm.TREE}, {null, Algorithm.RING}};
        for (Algorithm[] byRank : forced) {
            try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
                g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                    try (Communicator c = Communicator.builder().transport(t).store(store)
                            .options(CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(20))
                                    .withAlgorithm(byRank[rank]))
                            .build()) {
                        assertEquals(byRank[0], c.options().algorithm());
                        float[] v = new float[64 << 10]; // large enough that the policy does not pick a forced one by chance
                        java.util.Arrays.fill(v, rank + 1);
                        c.allReduce(v, ReduceOp.SUM);
                        assertEquals(3f, v[0]);
                        assertEquals(3f, v[v.length - 1]);
                    }
                });
            }
        }
    }
}
