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
    void sharedWindowTakesSmallVectorsAndEverythingWithMoreThanTwoRanks() {
        long window = 18_000;
        assertEquals(Algorithm.SHARED_WINDOW, p.choose(8, 2, false, window, null));
        assertEquals(Algorithm.SHARED_WINDOW, p.choose(0, 6, false, window, null));
        assertEquals(Algorithm.SHARED_WINDOW, p.choose(p.smallBytes(), 7, false, window, null));
        assertEquals(Algorithm.RHD, p.choose(8, 4, false, 0, null), "no window");
        assertEquals(Algorithm.TREE, p.choose(8, 6, false, 4, null), "vector larger than the window");
        assertEquals(Algorithm.SHARED_WINDOW, p.choose(p.smallBytes() + 1, 2, false, window, null),
                "two ranks, above smallBytes");
        assertEquals(Algorithm.RING, p.choose(window + 1, 2, false, window, null), "two ranks, larger than the window");
        long roomy = 1 << 20;
        assertEquals(Algorithm.SHARED_WINDOW, p.choose(AlgorithmPolicy.TWO_RANK_WINDOW_BYTES, 2, false, roomy, null));
        assertEquals(Algorithm.RING, p.choose(AlgorithmPolicy.TWO_RANK_WINDOW_BYTES + 1, 2, false, roomy, null),
                "two ranks, above their window bound");
        assertEquals(Algorithm.RING, p.choose(AlgorithmPolicy.TWO_RANK_WINDOW_BYTES, 2, false, 0, null), "no window");
        assertEquals(Algorithm.SHARED_WINDOW, p.choose(window, 3, false, window, null), "more ranks: any size");
        assertEquals(Algorithm.SHARED_WINDOW, p.choose(1L << 30, 8, false, window, null), "more ranks: any size, piece by piece");
        assertEquals(Algorithm.RING, p.choose(1L << 30, 8, false, 0, null), "no window");
        // the override still picks any other algorithm; a forced SHARED_WINDOW that cannot run falls back
        assertEquals(Algorithm.RING, p.choose(8, 2, false, window, Algorithm.RING));
        assertEquals(Algorithm.RHD, p.choose(8, 4, false, window, Algorithm.RHD));
        assertEquals(Algorithm.TREE, p.choose(8, 4, false, window, Algorithm.TREE));
        assertEquals(Algorithm.SHARED_WINDOW, p.choose(window, 4, false, window, Algorithm.SHARED_WINDOW));
        assertEquals(Algorithm.SHARED_WINDOW, p.choose(window + 1, 2, false, window, Algorithm.SHARED_WINDOW), "forced: in pieces");
        assertEquals(Algorithm.RHD, p.choose(8, 2, false, 0, Algorithm.SHARED_WINDOW), "no window");
        assertEquals(Algorithm.RHD, p.choose(0, 2, false, 0, Algorithm.SHARED_WINDOW), "no window, even for nothing");
        assertEquals(Algorithm.TREE, p.choose(0, 3, false, 0, null), "no window, even for nothing");
        assertEquals(Algorithm.SHARED_WINDOW, Algorithm.parse("window"));
        assertEquals(Algorithm.SHARED_WINDOW, Algorithm.parse("shared_window"));
    }

    @Test
    void recursiveDoublingTakesMidSizesOverTcpWithoutASharedWindow() {
        assertEquals(p.smallBytes(), p.recursiveDoublingBytes(), "no transport yet: no extra range");
        assertEquals(Algorithm.RING, p.choose(p.smallBytes() + 1, 2, false, 0, null));
        assertEquals(p.smallBytes(), p.forTransport("verbs").recursiveDoublingBytes());
        assertEquals(p.smallBytes(), p.forTransport("shm").recursiveDoublingBytes());
        assertEquals(Algorithm.TREE, p.forTransport("verbs").choose(p.smallBytes() + 1, 4, false, 0, null));
        AlgorithmPolicy tcp = p.forTransport("tcp");
        long rd = tcp.recursiveDoublingBytes();
        assertEquals(AlgorithmPolicy.TCP_RECURSIVE_DOUBLING_BYTES, rd);
        assertTrue(rd > p.smallBytes());
        AlgorithmPolicy explicit = new AlgorithmPolicy(1024, 1 << 18, 1 << 20, 4096);
        assertEquals(4096, explicit.forTransport("tcp").recursiveDoublingBytes(), "a bound set explicitly stays");
        assertEquals(4096, explicit.forTransport("verbs").recursiveDoublingBytes(), "a bound set explicitly stays");
        for (int n : new int[] {2, 4, 8}) {
            assertEquals(Algorithm.RHD, tcp.choose(tcp.smallBytes() + 1, n, false, 0, null), n + " ranks");
            assertEquals(Algorithm.RHD, tcp.choose(rd, n, false, 0, null), n + " ranks");
            assertTrue(tcp.recursiveDoubling(rd, n), "one exchange of the whole vector per step");
            assertTrue(!tcp.recursiveDoubling(rd + 1, n), "the eager path ends there");
        }
        assertEquals(Algorithm.RHD, tcp.choose(rd + 1, 2, false, 0, null), "two ranks: doubling on the data lanes");
        assertEquals(Algorithm.RHD, tcp.choose(rd + 1, 4, false, 0, null), "halving and doubling above");
        assertEquals(Algorithm.TREE, tcp.choose(rd + 1, 8, false, 0, null));
        assertEquals(Algorithm.TREE, tcp.choose(rd, 6, false, 0, null), "not a power of two");
        assertEquals(Algorithm.RING, tcp.choose(2 * rd, 2, false, 2 * rd, null), "a shared window keeps its rules");
        assertEquals(Algorithm.SHARED_WINDOW, tcp.choose(rd, 4, false, rd, null), "a shared window keeps its rules");
        assertThrows(IllegalArgumentException.class, () -> new AlgorithmPolicy(64, 1024, 1 << 20, 32));
        assertEquals(1 << 20, new AlgorithmPolicy(1 << 20, 1 << 21, 1 << 22).forTransport("tcp").recursiveDoublingBytes(),
                "never below smallBytes");
    }

    @Test
    void twoRanksOverTcpExchangeTheWholeVectorUpToTheirDoublingBound() {
        AlgorithmPolicy tcp = p.forTransport("tcp");
        long bound = AlgorithmPolicy.TCP_TWO_RANK_DOUBLING_BYTES;
        assertTrue(bound > tcp.recursiveDoublingBytes(), "past the eager path");
        assertEquals(bound, tcp.doublingBytes(2));
        assertEquals(Algorithm.RHD, tcp.choose(tcp.recursiveDoublingBytes() + 1, 2, false, 0, null));
        assertEquals(Algorithm.RHD, tcp.choose(bound, 2, false, 0, null));
        assertTrue(!tcp.recursiveDoubling(bound, 2), "on the data lanes, not the eager control path");
        assertEquals(Algorithm.RING, tcp.choose(bound + 1, 2, false, 0, null));
        long halving = AlgorithmPolicy.TCP_TWO_RANK_HALVING_BYTES;
        assertEquals(Algorithm.RING, tcp.choose(halving - 1, 2, false, 0, null), "one chunk per half: the ring");
        assertEquals(Algorithm.RHD, tcp.choose(halving, 2, false, 0, null), "halving and doubling from there");
        assertTrue(halving > tcp.doublingBytes(2), "as halving, not doubling");
        assertEquals(Algorithm.RHD, tcp.choose(1L << 30, 2, false, 0, null), "at any size");
        assertEquals(Algorithm.RING, tcp.choose(halving, 2, false, 0, Algorithm.RING), "an override wins");
        assertEquals(Algorithm.RING, tcp.choose(bound, 2, false, 0, Algorithm.RING), "an override wins");
        assertEquals(Algorithm.RING, tcp.choose(bound, 2, false, 2 * bound, null), "a shared window keeps its rules");
        for (int n : new int[] {4, 8}) {
            assertEquals(tcp.smallBytes(), tcp.doublingBytes(n), n + " ranks: halving and doubling past small vectors");
        }
        for (String other : new String[] {"verbs", "shm"}) {
            AlgorithmPolicy o = p.forTransport(other);
            assertEquals(p.smallBytes(), o.doublingBytes(2), other);
            assertEquals(Algorithm.RING, o.choose(p.smallBytes() + 1, 2, false, 0, null), other);
            assertEquals(Algorithm.RING, o.choose(AlgorithmPolicy.TCP_TWO_RANK_HALVING_BYTES, 2, false, 0, null), other);
        }
        assertEquals(p.smallBytes(), p.doublingBytes(2), "no transport yet: no extra range");
        AlgorithmPolicy large = new AlgorithmPolicy(1 << 20, 1 << 21, 1 << 22).forTransport("tcp");
        assertEquals(1 << 20, large.doublingBytes(2), "never below smallBytes");
    }

    @Test
    void halvingAndDoublingTakesMidSizesFromTheRingOverTcpOnPowerOfTwoGroupsOfMoreThanTwo() {
        AlgorithmPolicy tcp = p.forTransport("tcp");
        long hd = tcp.halvingDoublingBytes();
        assertEquals(AlgorithmPolicy.TCP_HALVING_DOUBLING_BYTES, hd);
        assertTrue(hd > tcp.treeBytes());
        assertEquals(AlgorithmPolicy.TCP_HALVING_DOUBLING_OVER_TREE_RANKS, tcp.halvingDoublingOverTreeRanks());
        long aboveRd = tcp.recursiveDoublingBytes() + 1;
        assertEquals(Algorithm.RHD, tcp.choose(aboveRd, 4, false, 0, null), "4 ranks: halving and doubling, not the tree");
        assertTrue(!tcp.recursiveDoubling(aboveRd, 4));
        assertEquals(Algorithm.RHD, tcp.choose(tcp.treeBytes(), 4, false, 0, null), "4 ranks: the tree's range too");
        assertEquals(Algorithm.TREE, tcp.choose(aboveRd, 8, false, 0, null), "8 ranks keep the tree");
        assertEquals(Algorithm.TREE, tcp.choose(tcp.treeBytes(), 8, false, 0, null), "8 ranks keep the tree");
        assertEquals(Algorithm.TREE, tcp.choose(tcp.treeBytes(), 3, false, 0, null), "not a power of two: the tree");
        assertEquals(Algorithm.RING, tcp.choose(AlgorithmPolicy.TCP_TWO_RANK_DOUBLING_BYTES + 1, 2, false, 0, null),
                "two ranks: the ring");
        for (int n : new int[] {4, 8}) {
            assertEquals(Algorithm.RHD, tcp.choose(tcp.treeBytes() + 1, n, false, 0, null), n + " ranks");
            assertEquals(Algorithm.RHD, tcp.choose(hd, n, false, 0, null), n + " ranks");
            assertTrue(!tcp.recursiveDoubling(hd, n), "Rabenseifner, not one exchange of the whole vector");
            assertEquals(Algorithm.RING, tcp.choose(hd + 1, n, false, 0, null), n + " ranks");
        }
        assertEquals(Algorithm.RHD, tcp.choose(hd, 2, false, 0, null), "two ranks: their own rule");
        assertEquals(Algorithm.RING, tcp.choose(hd, 6, false, 0, null), "not a power of two");
        assertEquals(Algorithm.RING, tcp.choose(hd, 4, false, 0, Algorithm.RING), "an override wins");
        assertEquals(Algorithm.SHARED_WINDOW, tcp.choose(hd, 4, false, hd, null), "a shared window keeps its rules");
        for (String other : new String[] {"verbs", "shm"}) {
            assertEquals(0, p.forTransport(other).halvingDoublingBytes(), other);
            assertEquals(0, p.forTransport(other).halvingDoublingOverTreeRanks(), other);
            assertEquals(Algorithm.TREE, p.forTransport(other).choose(p.treeBytes(), 4, false, 0, null), other);
            assertEquals(Algorithm.RING, p.forTransport(other).choose(p.treeBytes() + 1, 4, false, 0, null), other);
        }
        AlgorithmPolicy explicit = new AlgorithmPolicy(1024, 1 << 18, 1 << 20, 4096).forTransport("tcp");
        assertEquals(4096, explicit.recursiveDoublingBytes(), "an explicit recursive-doubling bound stays");
        assertEquals(hd, explicit.halvingDoublingBytes());
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
        CollectiveOptions o = CollectiveOptions.fromEnvironment(Map.of("RDMA4J_ALGO", "Tree", "RDMA4J_TIMEOUT_MS", "1234",
                "RDMA4J_CHUNK_BYTES", "8192", "RDMA4J_WINDOW", "3", "RDMA4J_CHANNELS", "2"));
        assertEquals(Algorithm.TREE, o.algorithm());
        assertEquals(Duration.ofMillis(1234), o.timeout());
        assertEquals(8192, o.chunkBytes());
        assertEquals(3, o.window());
        assertEquals(2, o.channels());
        assertNull(CollectiveOptions.fromEnvironment(Map.of()).algorithm());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CollectiveOptions.fromEnvironment(Map.of("RDMA4J_ALGO", "butterfly")));
        assertTrue(e.getMessage().contains("ring, tree, rhd, twohop or window"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> CollectiveOptions.fromEnvironment(Map.of("RDMA4J_WINDOW", "x")));
        assertTrue(e.getMessage().contains("RDMA4J_WINDOW"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> CollectiveOptions.defaults().withChunkBytes(100));
        // 2^32 + 64 would wrap to a valid-looking 64 if cast
        e = assertThrows(IllegalArgumentException.class,
                () -> CollectiveOptions.fromEnvironment(Map.of("RDMA4J_CHUNK_BYTES", "4294967360")));
        assertEquals("RDMA4J_CHUNK_BYTES=4294967360: out of range", e.getMessage());
        // every refusal names its variable, range checks and a 0 (which would silently mean the transport's default) included
        for (Map.Entry<String, String> bad : java.util.List.of(Map.entry("RDMA4J_CHUNK_BYTES", "0"),
                Map.entry("RDMA4J_CHUNK_BYTES", "100"), Map.entry("RDMA4J_WINDOW", "0"), Map.entry("RDMA4J_WINDOW", "65"),
                Map.entry("RDMA4J_CHANNELS", "17"), Map.entry("RDMA4J_TIMEOUT_MS", "-5"))) {
            e = assertThrows(IllegalArgumentException.class, () -> CollectiveOptions.fromEnvironment(Map.ofEntries(bad)));
            assertTrue(e.getMessage().startsWith(bad.getKey() + "=" + bad.getValue() + ": "), e.getMessage());
        }
        // longer than nanoseconds count: every collective failed on every rank, and close() too
        e = assertThrows(IllegalArgumentException.class,
                () -> CollectiveOptions.fromEnvironment(Map.of("RDMA4J_TIMEOUT_MS", "99999999999999")));
        assertTrue(e.getMessage().startsWith("RDMA4J_TIMEOUT_MS=99999999999999: timeout must be positive and at most"),
                e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> CollectiveOptions.defaults().withTimeout(java.time.temporal.ChronoUnit.FOREVER.getDuration()));
        assertEquals(io.rdma4j.transport.TransportConfig.MAX_TIMEOUT,
                CollectiveOptions.defaults().withTimeout(io.rdma4j.transport.TransportConfig.MAX_TIMEOUT).timeout());
        e = assertThrows(IllegalArgumentException.class, () -> CollectiveOptions.fromEnvironment(Map.of("RDMA4J_ALGO", "x")));
        assertTrue(e.getMessage().startsWith("RDMA4J_ALGO=x: unknown allreduce algorithm"), e.getMessage());
    }

    @Test
    void theTransportChoosesChunkAndWindowThatTheOptionsLeaveOpen() {
        CollectiveOptions d = CollectiveOptions.defaults();
        assertEquals(CollectiveOptions.TRANSPORT_DEFAULT, d.chunkBytes());
        assertEquals(CollectiveOptions.TRANSPORT_DEFAULT, d.window());
        for (boolean ranksOutnumberCpus : new boolean[] {false, true}) {
            CollectiveOptions verbs = d.forTransport("verbs", ranksOutnumberCpus);
            assertEquals(512 * 1024, verbs.chunkBytes());
            assertEquals(8, verbs.window());
            CollectiveOptions shm = d.forTransport("shm", ranksOutnumberCpus);
            assertEquals(256 * 1024, shm.chunkBytes());
            assertEquals(4, shm.window());
            assertEquals(shm, d.forTransport("an application's own", ranksOutnumberCpus));
            CollectiveOptions set = CollectiveOptions.fromEnvironment(Map.of("RDMA4J_CHUNK_BYTES", "8192"));
            assertEquals(8192, set.forTransport("verbs", ranksOutnumberCpus).chunkBytes());
            assertEquals(8, set.forTransport("verbs", ranksOutnumberCpus).window());
            assertEquals(8192, set.forTransport("tcp", ranksOutnumberCpus).chunkBytes(), "a chunk set explicitly stays");
            assertEquals(3, d.withWindow(3).forTransport("verbs", ranksOutnumberCpus).window());
        }
        // TCP: larger chunks only while every rank has a CPU of its own
        assertEquals(256 * 1024, d.forTransport("tcp", true).chunkBytes());
        assertEquals(512 * 1024, d.forTransport("tcp", false).chunkBytes());
        assertEquals(4, d.forTransport("tcp", false).window());
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
