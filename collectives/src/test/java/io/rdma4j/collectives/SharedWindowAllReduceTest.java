package io.rdma4j.collectives;

import io.rdma4j.collectives.scenario.Values;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The shared-window allreduce ({@link Algorithm#SHARED_WINDOW}) with ranks on threads of this JVM over the
 * shm provider: when the policy picks it, results for every type and operator, the rank-order
 * fold of half-precision types, slot reuse, mismatches found from the slot header, a peer that
 * goes away, and who gets the window. (Separate processes: CollectivesShmTest and the fault
 * scenarios.)
 */
class SharedWindowAllReduceTest {
    private static final Duration LIMIT = Duration.ofMinutes(2);

    private static Communicator comm(Transport t, Store store) {
        return Communicator.builder().transport(t).store(store)
                .options(CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(20))).build();
    }

    private static LocalGroup shm(int n) {
        return LocalGroup.start(n, LocalGroup.config(TransportConfig.Provider.SHM));
    }

    @Test
    void policyPicksItForSmallVectorsOnlyWhereThereIsAWindow() throws Exception {
        try (LocalGroup g = shm(2)) {
            g.run(LIMIT, (rank, t, store) -> {
                try (Communicator c = comm(t, store)) {
                    assertEquals(Algorithm.SHARED_WINDOW, c.algorithmFor(8));
                    assertEquals(Algorithm.SHARED_WINDOW, c.algorithmFor(AlgorithmPolicy.DEFAULT_SMALL_BYTES));
                    assertEquals(Algorithm.SHARED_WINDOW, c.algorithmFor(AlgorithmPolicy.TWO_RANK_WINDOW_BYTES));
                    assertEquals(Algorithm.RING, c.algorithmFor(AlgorithmPolicy.TWO_RANK_WINDOW_BYTES + 1));
                    Communicator sub = c.split(0, rank); // shares the transport, runs its own sequence
                    assertEquals(Algorithm.RHD, sub.algorithmFor(8));
                    sub.close();
                }
                // the window has one owner per transport: a later communicator on it uses messages
                try (Communicator again = comm(t, store)) {
                    assertEquals(Algorithm.RHD, again.algorithmFor(8));
                    float[] f = {rank + 1f};
                    again.allReduce(f, ReduceOp.SUM);
                    assertEquals(3f, f[0]);
                }
            });
        }
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(LIMIT, (rank, t, store) -> {
                try (Communicator c = comm(t, store)) {
                    assertEquals(Algorithm.RHD, c.algorithmFor(8), "no shared window over TCP");
                    assertEquals(Algorithm.RHD, c.algorithmFor(0));
                    assertEquals(Algorithm.RHD, c.algorithmFor(AlgorithmPolicy.TCP_RECURSIVE_DOUBLING_BYTES),
                            "TCP's own bound of recursive doubling");
                    assertEquals(Algorithm.RHD, c.algorithmFor(AlgorithmPolicy.TCP_RECURSIVE_DOUBLING_BYTES + 1),
                            "two ranks over TCP: doubling on the data lanes");
                    assertEquals(Algorithm.RING, c.algorithmFor(AlgorithmPolicy.TCP_TWO_RANK_DOUBLING_BYTES + 1));
                    assertEquals(Algorithm.RHD, c.algorithmFor(AlgorithmPolicy.TCP_TWO_RANK_HALVING_BYTES),
                            "two ranks over TCP: halving and doubling");
                    float[] v = new float[(int) (AlgorithmPolicy.TCP_RECURSIVE_DOUBLING_BYTES / 4)];
                    java.util.Arrays.fill(v, rank + 1);
                    v[v.length - 1] = 10 * (rank + 1);
                    c.allReduce(v, ReduceOp.SUM);
                    assertEquals(3f, v[0]);
                    assertEquals(30f, v[v.length - 1]);
                    // just under the doubling bound (the whole vector exchanged once on the data lanes)
                    // and just over the halving bound (each rank reduces one half, then the halves
                    // cross back): every element checked against its closed-form sum
                    for (long bytes : new long[] {AlgorithmPolicy.TCP_TWO_RANK_DOUBLING_BYTES - 20,
                            AlgorithmPolicy.TCP_TWO_RANK_HALVING_BYTES + 12}) {
                        float[] w = new float[(int) (bytes / 4)];
                        for (int i = 0; i < w.length; i++) {
                            w[i] = (rank + 1) * (i % 1000);
                        }
                        c.allReduce(w, ReduceOp.SUM);
                        for (int i = 0; i < w.length; i++) {
                            if (w[i] != 3f * (i % 1000)) {
                                throw new AssertionError(bytes + " bytes, element " + i + ": " + w[i] + ", expected "
                                        + 3f * (i % 1000));
                            }
                        }
                    }
                    float[] none = {};
                    c.allReduce(MemorySegment.ofArray(none), MemorySegment.ofArray(none), 0, DataType.F32, ReduceOp.SUM,
                            Algorithm.SHARED_WINDOW); // forced but impossible: the policy's choice runs
                }
            });
        }
    }

    @Test
    void withMoreThanTwoRanksThePolicyUsesItAtAnySize() throws Exception {
        try (LocalGroup g = shm(3)) {
            g.run(LIMIT, (rank, t, store) -> {
                try (Communicator c = comm(t, store)) {
                    assertEquals(Algorithm.SHARED_WINDOW, c.algorithmFor(8));
                    assertEquals(Algorithm.SHARED_WINDOW, c.algorithmFor(1 << 20));
                    assertEquals(Algorithm.SHARED_WINDOW, c.algorithmFor(1L << 30));
                }
            });
        }
    }

    /**
     * A vector larger than the window's slot goes through it piece by piece (1 MiB slots for 3
     * ranks): pieces of both schemes, a last piece of one element, in place, and calls before and
     * after it still line up.
     */
    @Test
    void vectorsLargerThanTheWindowGoInPieces() throws Exception {
        int n = 3;
        long slotFloats = (1L << 20) / 4;
        long[] counts = {2 * slotFloats + 1, slotFloats + 100, 10};
        try (LocalGroup g = shm(n)) {
            g.run(LIMIT, (rank, t, store) -> {
                try (Communicator c = comm(t, store); Arena arena = Arena.ofConfined()) {
                    MemorySegment buf = arena.allocate(4 * counts[0]);
                    for (long count : counts) {
                        for (long i = 0; i < count; i++) {
                            buf.setAtIndex(ValueLayout.JAVA_INT, i, (int) (i * 7 + rank));
                        }
                        c.allReduce(buf, buf, count, DataType.I32, ReduceOp.SUM, Algorithm.SHARED_WINDOW);
                        for (long i = 0; i < count; i++) {
                            int want = (int) (n * (i * 7) + n * (n - 1) / 2);
                            if (want != buf.getAtIndex(ValueLayout.JAVA_INT, i)) {
                                assertEquals(want, buf.getAtIndex(ValueLayout.JAVA_INT, i), "count " + count + " element " + i);
                            }
                        }
                    }
                    // out of place, AVG (finished once per element, in every piece), input untouched
                    long count = counts[0];
                    MemorySegment out = arena.allocate(4 * count);
                    for (long i = 0; i < count; i++) {
                        buf.setAtIndex(ValueLayout.JAVA_INT, i, (int) (3 * i + 3 * rank));
                    }
                    c.allReduce(buf, out, count, DataType.I32, ReduceOp.AVG, Algorithm.SHARED_WINDOW);
                    for (long i = 0; i < count; i++) {
                        if (3 * i + 3 != out.getAtIndex(ValueLayout.JAVA_INT, i)
                                || 3 * i + 3 * rank != buf.getAtIndex(ValueLayout.JAVA_INT, i)) {
                            assertEquals(3 * i + 3, out.getAtIndex(ValueLayout.JAVA_INT, i), "avg element " + i);
                            assertEquals(3 * i + 3 * rank, buf.getAtIndex(ValueLayout.JAVA_INT, i), "input element " + i);
                        }
                    }
                }
            });
        }
    }

    /**
     * Three ranks (the fold's loop runs), every type and operator, both placements, heap too;
     * counts 0, 1 and 7, and those that fill the slot's first cache line behind its header (32
     * bytes) and go one element past it, where the payload is split between two lines.
     */
    @Test
    void everyTypeAndOperatorInAndOutOfPlace() throws Exception {
        everyTypeAndOperator(3, type -> new long[] {0, 1, 7, 32 / type.byteSize(), 32 / type.byteSize() + 1}, (rank, c) -> {
            double[] d = {rank, -rank, 0.5}; // heap array, through the window without any scratch
            c.allReduce(d, ReduceOp.MAX);
            assertArrayEquals(new double[] {2, 0, 0.5}, d);
        });
    }

    /**
     * The sharded scheme (vectors from 64 KiB): four ranks, every type and operator, a count just
     * over the threshold and one whose shards are uneven, both placements; and a heap array.
     */
    @Test
    void shardedSchemeEveryTypeAndOperator() throws Exception {
        everyTypeAndOperator(4, type -> {
            long min = Math.ceilDiv(64 << 10, type.byteSize());
            return new long[] {min + 1, 3 * min + 13};
        }, (rank, c) -> {
            float[] f = new float[100_003];
            Arrays.fill(f, rank + 1);
            f[100_002] = rank;
            c.allReduce(f, ReduceOp.SUM);
            assertEquals(10f, f[0]);
            assertEquals(10f, f[50_000]);
            assertEquals(6f, f[100_002], "the last element of the last shard");
        });
    }

    /**
     * Two ranks: the sharded scheme (from 128 KiB with two ranks; forced, as the policy takes the
     * ring there) for every type and operator with two even and two uneven shards, and the whole
     * scheme from smallBytes up to {@link AlgorithmPolicy#TWO_RANK_WINDOW_BYTES}, as the policy
     * chooses it.
     */
    @Test
    void twoRanksInBothSchemes() throws Exception {
        everyTypeAndOperator(2, type -> {
            long min = Math.ceilDiv(128 << 10, type.byteSize());
            return new long[] {min, 2 * min + 13};
        }, (rank, c) -> {
            for (long bytes : new long[] {AlgorithmPolicy.DEFAULT_SMALL_BYTES + 4, 32 << 10,
                    AlgorithmPolicy.TWO_RANK_WINDOW_BYTES - 4, AlgorithmPolicy.TWO_RANK_WINDOW_BYTES}) {
                float[] v = new float[(int) (bytes / Float.BYTES)];
                Arrays.fill(v, rank + 2);
                v[v.length - 1] = rank;
                assertEquals(Algorithm.SHARED_WINDOW, c.algorithmFor(bytes));
                c.allReduce(v, ReduceOp.AVG);
                assertEquals(2.5f, v[0], bytes + " B");
                assertEquals(2.5f, v[v.length / 2], bytes + " B, the middle");
                assertEquals(0.5f, v[v.length - 1], bytes + " B, the last element");
            }
        });
    }

    private interface RankCheck {
        void run(int rank, Communicator c) throws Exception;
    }

    private static void everyTypeAndOperator(int n, Function<DataType, long[]> counts, RankCheck extra) throws Exception {
        List<String> failures = new CopyOnWriteArrayList<>();
        try (LocalGroup g = shm(n)) {
            g.run(LIMIT, (rank, t, store) -> {
                try (Communicator c = comm(t, store); Arena arena = Arena.ofConfined()) {
                    long most = 0;
                    for (DataType type : DataType.values()) {
                        for (long count : counts.apply(type)) {
                            most = Math.max(most, count * type.byteSize());
                        }
                    }
                    MemorySegment in = arena.allocate(Math.max(64, most));
                    MemorySegment out = arena.allocate(Math.max(64, most));
                    int id = 0;
                    for (DataType type : DataType.values()) {
                        for (ReduceOp op : ReduceOp.values()) {
                            for (long count : counts.apply(type)) {
                                for (boolean inPlace : new boolean[] {true, false}) {
                                    int caseId = ++id;
                                    for (long i = 0; i < count; i++) {
                                        Values.write(in, i, type, Values.input(rank, caseId, i, type, op));
                                    }
                                    MemorySegment dst = inPlace ? in : out;
                                    c.allReduce(in, dst, count, type, op, Algorithm.SHARED_WINDOW);
                                    for (long i = 0; i < count; i++) {
                                        double want = Values.reference(n, caseId, i, type, op, (r, x) -> x);
                                        double got = Values.read(dst, i, type);
                                        if (!Values.close(got, want, type, op, n) && failures.size() < 20) {
                                            failures.add("rank " + rank + " " + type + " " + op + " count=" + count
                                                    + (inPlace ? " in-place" : "") + " [" + i + "] = " + got + ", want " + want);
                                        }
                                    }
                                }
                            }
                        }
                    }
                    extra.run(rank, c);
                }
            });
        }
        assertEquals(List.of(), failures);
    }

    /**
     * Non-exact bf16/f16 inputs: every rank gets the same bits, namely the rank-order fold with a
     * rounding after every step (computed here independently of the library's kernels), which
     * differs from rounding once at the end for some elements.
     */
    @Test
    void halfPrecisionFoldsInRankOrderRoundingEveryStep() throws Exception {
        int n = 4;
        int count = 1000;
        short[][][] results = new short[2][n][];
        try (LocalGroup g = shm(n)) {
            g.run(LIMIT, (rank, t, store) -> {
                try (Communicator c = comm(t, store)) {
                    for (int k = 0; k < 2; k++) {
                        DataType type = k == 0 ? DataType.BF16 : DataType.F16;
                        short[] v = halfInputs(type, rank, count);
                        c.allReduce(v, type, ReduceOp.SUM);
                        results[k][rank] = v;
                    }
                }
            });
        }
        for (int k = 0; k < 2; k++) {
            DataType type = k == 0 ? DataType.BF16 : DataType.F16;
            short[][] in = new short[n][];
            for (int r = 0; r < n; r++) {
                in[r] = halfInputs(type, r, count);
            }
            short[] want = new short[count];
            int roundedOnceDiffers = 0;
            for (int i = 0; i < count; i++) {
                float acc = toFloat(type, in[0][i]);
                double exact = acc;
                for (int r = 1; r < n; r++) {
                    float x = toFloat(type, in[r][i]);
                    acc = toFloat(type, round(type, acc + x));
                    exact += x;
                }
                want[i] = round(type, acc);
                if (round(type, (float) exact) != want[i]) {
                    roundedOnceDiffers++;
                }
            }
            assertTrue(roundedOnceDiffers > 0, type + ": inputs too tame to tell the roundings apart");
            for (int r = 0; r < n; r++) {
                assertArrayEquals(want, results[k][r], type + " on rank " + r);
            }
        }
    }

    private static short[] halfInputs(DataType type, int rank, int count) {
        Random rnd = new Random(rank * 7919L + type.ordinal());
        short[] v = new short[count];
        for (int i = 0; i < count; i++) {
            v[i] = round(type, (float) (rnd.nextGaussian() * 100));
        }
        return v;
    }

    private static float toFloat(DataType type, short h) {
        return type == DataType.BF16 ? Float.intBitsToFloat((h & 0xFFFF) << 16) : Float.float16ToFloat(h);
    }

    /** Round to nearest even into the storage type (finite values only: the inputs are). */
    private static short round(DataType type, float f) {
        if (type == DataType.F16) {
            return Float.floatToFloat16(f);
        }
        int bits = Float.floatToRawIntBits(f);
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    /** Consecutive calls reuse the two slots; interleaved collectives and async calls keep the order. */
    @Test
    void slotsAreReusedSafelyAcrossManyCallsAndOtherCollectives() throws Exception {
        int n = 4;
        try (LocalGroup g = shm(n)) {
            g.run(LIMIT, (rank, t, store) -> {
                try (Communicator c = comm(t, store); Arena arena = Arena.ofShared()) { // async calls run on the worker
                    MemorySegment buf = arena.allocate(4096);
                    MemorySegment b = arena.allocate(64);
                    for (int it = 0; it < 400; it++) {
                        int count = 1 + it % 1000;
                        for (int i = 0; i < count; i++) {
                            buf.setAtIndex(ValueLayout.JAVA_INT, i, it * 31 + i + rank);
                        }
                        if (it % 3 == 0) {
                            c.allReduceAsync(buf, buf, count, DataType.I32, ReduceOp.SUM).await(LIMIT);
                        } else {
                            c.allReduce(buf, buf, count, DataType.I32, ReduceOp.SUM);
                        }
                        for (int i = 0; i < count; i++) {
                            int want = n * (it * 31 + i) + n * (n - 1) / 2;
                            assertEquals(want, buf.getAtIndex(ValueLayout.JAVA_INT, i), "call " + it + " element " + i);
                        }
                        if (it % 7 == 0) { // a collective in between, with a root that needs nobody to wait
                            b.set(ValueLayout.JAVA_LONG, 0, rank == it % n ? it : -1);
                            c.broadcast(b, 1, DataType.I64, it % n);
                            assertEquals(it, b.get(ValueLayout.JAVA_LONG, 0));
                        }
                    }
                }
            });
        }
    }

    /** Calls alternate between the whole and the sharded scheme on the same two slots. */
    @Test
    void slotsAreReusedSafelyAcrossBothSchemes() throws Exception {
        int n = 4;
        int[] counts = {16, 20_000, 1, 70_000, 70_000, 5, 20_000};
        try (LocalGroup g = shm(n)) {
            g.run(LIMIT, (rank, t, store) -> {
                try (Communicator c = comm(t, store); Arena arena = Arena.ofConfined()) {
                    MemorySegment buf = arena.allocate(4L * 70_000);
                    for (int it = 0; it < 60; it++) {
                        int count = counts[it % counts.length];
                        for (int i = 0; i < count; i++) {
                            buf.setAtIndex(ValueLayout.JAVA_INT, i, it * 31 + i + rank);
                        }
                        c.allReduce(buf, buf, count, DataType.I32, ReduceOp.SUM);
                        for (int i = 0; i < count; i++) {
                            int want = n * (it * 31 + i) + n * (n - 1) / 2;
                            if (want != buf.getAtIndex(ValueLayout.JAVA_INT, i)) {
                                assertEquals(want, buf.getAtIndex(ValueLayout.JAVA_INT, i), "call " + it + " element " + i);
                            }
                        }
                    }
                }
            });
        }
    }

    @Test
    void mismatchedCountIsFoundFromTheHeaderOnEveryRank() throws Exception {
        CollectiveMismatchException[] got = new CollectiveMismatchException[2];
        try (LocalGroup g = shm(2)) {
            g.run(LIMIT, (rank, t, store) -> {
                try (Communicator c = comm(t, store)) {
                    float[] f = new float[rank == 0 ? 8 : 9];
                    long t0 = System.nanoTime();
                    got[rank] = assertThrows(CollectiveMismatchException.class, () -> c.allReduce(f, ReduceOp.SUM));
                    assertTrue(System.nanoTime() - t0 < Duration.ofSeconds(5).toNanos(), "found at once, not by the stall check");
                    assertThrows(CollectiveException.class, c::barrier, "the communicator stays broken");
                }
            });
        }
        for (int r = 0; r < 2; r++) {
            assertEquals(1 - r, got[r].failedRank());
            assertTrue(got[r].getMessage().contains("count=8") && got[r].getMessage().contains("count=9"),
                    got[r].getMessage());
        }
    }

    @Test
    void aPeerThatClosesItsTransportIsNamedAtOnce() throws Exception {
        try (LocalGroup g = shm(3)) {
            g.run(LIMIT, (rank, t, store) -> {
                Communicator c = comm(t, store);
                float[] f = {1};
                c.allReduce(f, ReduceOp.SUM);
                if (rank == 2) {
                    t.close(); // gone without joining the next call
                    return;
                }
                long t0 = System.nanoTime();
                CollectiveException e = assertThrows(CollectiveException.class, () -> c.allReduce(f, ReduceOp.SUM));
                assertTrue(System.nanoTime() - t0 < Duration.ofSeconds(10).toNanos(), "took longer than the timeout");
                assertEquals(2, e.failedRank(), e.toString());
                assertTrue(e.getMessage().contains("rank 2"), e.getMessage());
                assertEquals(3f, f[0], "a failed call leaves the buffer as the last good one left it");
                c.close();
            });
        }
    }
}
