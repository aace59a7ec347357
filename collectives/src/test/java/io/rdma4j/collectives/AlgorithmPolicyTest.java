package io.rdma4j.collectives;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AlgorithmPolicyTest {
    private final AlgorithmPolicy p = AlgorithmPolicy.defaults();

    @Test
    void documentedChoices() {
        assertEquals(Algorithm.RHD, p.choose(8, 4, false, null));
        assertEquals(Algorithm.RHD, p.choose(8, 2, false, null));
        assertEquals(Algorithm.TREE, p.choose(8, 6, false, null));
        assertEquals(Algorithm.TREE, p.choose(100_000, 8, false, null));
        assertEquals(Algorithm.RING, p.choose(100_000, 2, false, null));
        assertEquals(Algorithm.RING, p.choose(64 << 20, 8, false, null));
        assertEquals(Algorithm.TWO_HOP, p.choose(64 << 20, 8, true, null));
        assertEquals(Algorithm.RHD, p.choose(8, 8, true, null)); // latency-bound stays flat
    }

    @Test
    void overrideWinsWhenRunnableElseFallsBack() {
        assertEquals(Algorithm.RING, p.choose(8, 4, false, Algorithm.RING));
        assertEquals(Algorithm.TREE, p.choose(64 << 20, 4, false, Algorithm.TREE));
        assertEquals(Algorithm.RHD, p.choose(64 << 20, 4, false, Algorithm.RHD));
        assertEquals(Algorithm.RING, p.choose(64 << 20, 6, false, Algorithm.RHD)); // not a power of two
        assertEquals(Algorithm.RING, p.choose(64 << 20, 6, false, Algorithm.TWO_HOP)); // no hierarchy
    }

    @Test
    void optionsFromEnvironment() {
        CollectiveOptions o = CollectiveOptions.fromEnv(Map.of("RDMA4J_ALGO", "Tree", "RDMA4J_TIMEOUT_MS", "1234",
                "RDMA4J_CHUNK_BYTES", "8192", "RDMA4J_WINDOW", "3", "RDMA4J_CHANNELS", "2"));
        assertEquals(Algorithm.TREE, o.algorithm());
        assertEquals(Duration.ofMillis(1234), o.timeout());
        assertEquals(8192, o.chunkBytes());
        assertEquals(3, o.window());
        assertEquals(2, o.channels());
        assertNull(CollectiveOptions.fromEnv(Map.of()).algorithm());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CollectiveOptions.fromEnv(Map.of("RDMA4J_ALGO", "butterfly")));
        assertTrue(e.getMessage().contains("ring, tree, rhd or twohop"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> CollectiveOptions.fromEnv(Map.of("RDMA4J_WINDOW", "x")));
        assertTrue(e.getMessage().contains("RDMA4J_WINDOW"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> CollectiveOptions.defaults().withChunkBytes(100));
    }

    @Test
    void topologyGroupsRanksByHost() {
        Topology t = new Topology(new String[] {"a", "b", "a", "b", "c", "c"});
        assertEquals(3, t.hosts());
        assertEquals(0, t.hostOf(2));
        assertEquals(1, t.localRank(2));
        assertEquals(2, t.localSize(5));
        assertTrue(t.uniform());
        assertEquals(false, new Topology(new String[] {"a", "a", "b"}).uniform());
    }
}
