package io.rdma4j.collectives.scenario;

import io.rdma4j.collectives.Algorithm;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.collectives.Work;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs a matrix of collective cases on one communicator (every rank runs the same list in the
 * same order) and checks every rank's output against {@link Values}' reference. Buffers are two
 * large native segments allocated once and sliced per case (plus heap arrays in some cases).
 * Failures are collected, not thrown, so one launch reports every broken case.
 */
public final class MatrixScenario {
    private final Communicator comm;
    private final int n;
    private final int rank;
    private final MemorySegment a;
    private final MemorySegment b;
    private final List<String> failures = new ArrayList<>();
    private int caseId;
    private int cases;

    public MatrixScenario(Communicator comm, Arena arena, long maxBytes) {
        this.comm = comm;
        this.n = comm.size();
        this.rank = comm.rank();
        this.a = arena.allocate(maxBytes, 64);
        this.b = arena.allocate(maxBytes, 64);
    }

    public List<String> failures() {
        return failures;
    }

    public int cases() {
        return cases;
    }

    static final long[] SMALL_COUNTS = {0, 1, 7, 0 /* n*5+3, set per group */, 20_000};

    long[] counts() {
        long[] c = SMALL_COUNTS.clone();
        c[3] = n * 5L + 3;
        return c;
    }

    /** Every collective, every data type and operator, counts 0, 1, 7, 5n+3 and 20000. */
    public void full(boolean withRhd) {
        // SHM runs where the communicator has a shared window (shm), else falls back to the policy
        Algorithm[] algos = withRhd ? new Algorithm[] {Algorithm.RING, Algorithm.TREE, Algorithm.RHD, Algorithm.SHARED_WINDOW}
                : new Algorithm[] {Algorithm.RING, Algorithm.TREE, Algorithm.SHARED_WINDOW};
        for (Algorithm al : algos) {
            for (DataType t : DataType.values()) {
                for (ReduceOp op : ReduceOp.values()) {
                    for (long count : counts()) {
                        allReduce(t, op, count, al, (caseId & 1) == 0);
                    }
                }
            }
        }
        for (DataType t : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                for (long count : counts()) {
                    reduceScatter(t, op, count, (caseId & 1) == 0);
                    reduce(t, op, count, caseId % n, (caseId & 1) == 0);
                }
            }
            for (long count : counts()) {
                allGather(t, count, (caseId & 1) == 0);
                broadcast(t, count, caseId % n);
                allToAll(t, count);
                sendRecv(t, count);
            }
        }
        heapArrays();
        asyncOrder();
        barrierRounds();
    }

    /** A reduced matrix for larger groups: the algorithms on every type with SUM and one other op. */
    public void reduced() {
        for (Algorithm al : Algorithm.values()) {
            if (al == Algorithm.TWO_HOP) {
                continue;
            }
            for (DataType t : DataType.values()) {
                for (long count : counts()) {
                    allReduce(t, ReduceOp.SUM, count, al, (caseId & 1) == 0);
                    allReduce(t, t == DataType.F16 ? ReduceOp.AVG : ReduceOp.MAX, count, al, (caseId & 1) == 1);
                }
            }
        }
        for (long count : counts()) {
            reduceScatter(DataType.F32, ReduceOp.SUM, count, false);
            reduce(DataType.I32, ReduceOp.PROD, count, n - 1, false);
            allGather(DataType.BF16, count, true);
            broadcast(DataType.F64, count, n / 2);
            allToAll(DataType.U8, count);
            sendRecv(DataType.I64, count);
        }
        barrierRounds();
    }

    /**
     * 16M+ element allreduces (few: they take memory and time). Inputs and checks go through
     * bulk array copies with a cheap closed-form input, since the test JVMs run with C1 only.
     */
    public void large() {
        largeAllReduce(DataType.F32, (16L << 20) + 5, Algorithm.RING, true);
        largeAllReduce(DataType.BF16, (16L << 20) + 1, Algorithm.TREE, false);
    }

    private static int largeInput(int r, long i) {
        return (int) ((i * 31 + r * 17) % 13) - 6;
    }

    void largeAllReduce(DataType t, long count, Algorithm al, boolean inPlace) {
        next();
        int block = 1 << 16;
        float[] f = new float[block];
        short[] h = new short[block];
        MemorySegment in = a.asSlice(0, count * t.byteSize());
        MemorySegment out = inPlace ? in : b.asSlice(0, count * t.byteSize());
        for (long s = 0; s < count; s += block) {
            int len = (int) Math.min(block, count - s);
            for (int k = 0; k < len; k++) {
                f[k] = largeInput(rank, s + k);
                h[k] = (short) (Float.floatToIntBits(f[k]) >>> 16);
            }
            if (t == DataType.F32) {
                MemorySegment.copy(f, 0, in, java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, s * 4, len);
            } else {
                MemorySegment.copy(h, 0, in, java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, s * 2, len);
            }
        }
        comm.allReduce(in, out, count, t, ReduceOp.SUM, al);
        for (long s = 0; s < count; s += block) {
            int len = (int) Math.min(block, count - s);
            if (t == DataType.F32) {
                MemorySegment.copy(out, java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, s * 4, f, 0, len);
            } else {
                MemorySegment.copy(out, java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, s * 2, h, 0, len);
            }
            for (int k = 0; k < len; k++) {
                long want = 0;
                for (int r = 0; r < n; r++) {
                    want += largeInput(r, s + k);
                }
                float got = t == DataType.F32 ? f[k] : Float.intBitsToFloat((h[k] & 0xFFFF) << 16);
                if (got != want) {
                    failures.add("large allReduce " + al + " " + t + " count=" + count + ": element " + (s + k)
                            + " = " + got + ", want " + want);
                    return;
                }
            }
        }
    }

    /** Allreduce with a given algorithm and its sub-communicator variant (split). */
    public void algorithms(Algorithm al) {
        for (DataType t : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                for (long count : counts()) {
                    allReduce(t, op, count, al, (caseId & 1) == 0);
                }
            }
        }
        allReduce(DataType.F32, ReduceOp.AVG, 3_000_001, al, true);
    }

    /** Split into two colours (reversed key order) and run collectives in both communicators. */
    public void split() {
        Communicator sub = comm.split(rank % 2, -rank);
        int subSize = (n + 1 - rank % 2) / 2;
        int expectedRank = subSize - 1 - rank / 2;
        if (sub.size() != subSize || sub.rank() != expectedRank) {
            failures.add("split: rank " + rank + " got sub rank " + sub.rank() + " of " + sub.size()
                    + ", expected " + expectedRank + " of " + subSize);
            return;
        }
        MatrixScenario inner = new MatrixScenario(sub, Arena.ofAuto(), 1 << 20);
        inner.caseId = 5000 + rank % 2 * 1000;
        inner.allReduce(DataType.I64, ReduceOp.SUM, 1003, Algorithm.RING, false);
        inner.allReduce(DataType.F32, ReduceOp.MAX, 77, Algorithm.TREE, true);
        allReduce(DataType.I32, ReduceOp.SUM, 999, Algorithm.RING, true); // world in between
        inner.broadcast(DataType.U8, 300, 0);
        for (String f : inner.failures) {
            failures.add("sub-communicator " + rank % 2 + ": " + f);
        }
        cases += inner.cases;
        Communicator none = comm.split(rank == 0 ? -1 : 0, 0);
        if ((rank == 0) != (none == null)) {
            failures.add("split with a negative colour must return null exactly on that rank");
        }
        if (none != null) {
            none.close();
        }
        sub.close();
    }

    // ---- cases -------------------------------------------------------------------------------

    private int next() {
        cases++;
        return ++caseId;
    }

    void allReduce(DataType t, ReduceOp op, long count, Algorithm al, boolean inPlace) {
        int id = next();
        long bytes = count * t.byteSize();
        MemorySegment in = a.asSlice(0, Math.max(bytes, 1));
        MemorySegment out = inPlace ? in : b.asSlice(0, Math.max(bytes, 1));
        for (long i = 0; i < count; i++) {
            Values.write(in, i, t, Values.input(rank, id, i, t, op));
        }
        byte[] sent = inPlace ? null : in.asSlice(0, bytes).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        comm.allReduce(in, out, count, t, op, al);
        String what = "allReduce " + al + " " + t + " " + op + " count=" + count + (inPlace ? " in-place" : "");
        check(what, out, 0, count, t, op, id, (r, i) -> i);
        long changed = inPlace ? -1 : MemorySegment.mismatch(in, 0, bytes, MemorySegment.ofArray(sent), 0, bytes);
        if (changed >= 0) { // the send buffer is the caller's: read, never written
            failures.add(what + " (n=" + n + ", rank " + rank + "): the send buffer changed at byte " + changed);
        }
    }

    void reduceScatter(DataType t, ReduceOp op, long count, boolean inPlace) {
        int id = next();
        long bytes = count * t.byteSize();
        MemorySegment in = a.asSlice(0, Math.max(bytes * n, 1));
        for (long i = 0; i < count * n; i++) {
            Values.write(in, i, t, Values.input(rank, id, i, t, op));
        }
        MemorySegment out = inPlace ? in.asSlice(bytes * rank, bytes) : b.asSlice(0, Math.max(bytes, 1));
        comm.reduceScatter(in, out, count, t, op);
        check("reduceScatter " + t + " " + op + " count=" + count + (inPlace ? " in-place" : ""),
                out, 0, count, t, op, id, (r, i) -> rank * count + i);
    }

    void reduce(DataType t, ReduceOp op, long count, int root, boolean inPlace) {
        int id = next();
        long bytes = count * t.byteSize();
        MemorySegment in = a.asSlice(0, Math.max(bytes, 1));
        for (long i = 0; i < count; i++) {
            Values.write(in, i, t, Values.input(rank, id, i, t, op));
        }
        MemorySegment out = inPlace ? in : b.asSlice(0, Math.max(bytes, 1));
        comm.reduce(in, rank == root ? out : null, count, t, op, root);
        if (rank == root) {
            check("reduce " + t + " " + op + " count=" + count + " root=" + root, out, 0, count, t, op, id, (r, i) -> i);
        } else if (!inPlace) {
            for (long i = 0; i < count; i++) { // the input must be left alone
                if (Values.read(in, i, t) != Values.input(rank, id, i, t, op)) {
                    failures.add("reduce " + t + " count=" + count + ": non-root input modified at " + i);
                    break;
                }
            }
        }
    }

    void allGather(DataType t, long count, boolean inPlace) {
        int id = next();
        long bytes = count * t.byteSize();
        MemorySegment out = b.asSlice(0, Math.max(bytes * n, 1));
        MemorySegment in = inPlace ? out.asSlice(bytes * rank, bytes) : a.asSlice(0, Math.max(bytes, 1));
        for (long i = 0; i < count; i++) {
            Values.write(in, i, t, Values.input(rank, id, i, t, null));
        }
        comm.allGather(in, out, count, t);
        for (long i = 0; i < count * n; i++) {
            int src = (int) (i / count);
            double want = Values.input(src, id, i % count, t, null);
            double got = Values.read(out, i, t);
            if (got != want) {
                failures.add("allGather " + t + " count=" + count + (inPlace ? " in-place" : "") + ": element " + i
                        + " = " + got + ", want " + want);
                return;
            }
        }
    }

    void broadcast(DataType t, long count, int root) {
        int id = next();
        MemorySegment data = a.asSlice(0, Math.max(count * t.byteSize(), 1));
        for (long i = 0; i < count; i++) {
            Values.write(data, i, t, rank == root ? Values.input(root, id, i, t, null) : -1);
        }
        comm.broadcast(data, count, t, root);
        for (long i = 0; i < count; i++) {
            double want = Values.input(root, id, i, t, null);
            if (Values.read(data, i, t) != want) {
                failures.add("broadcast " + t + " count=" + count + " root=" + root + ": element " + i + " = "
                        + Values.read(data, i, t) + ", want " + want);
                return;
            }
        }
    }

    void allToAll(DataType t, long count) {
        int id = next();
        long bytes = count * t.byteSize();
        MemorySegment in = a.asSlice(0, Math.max(bytes * n, 1));
        MemorySegment out = b.asSlice(0, Math.max(bytes * n, 1));
        for (long i = 0; i < count * n; i++) {
            Values.write(in, i, t, Values.input(rank, id, i, t, null));
        }
        comm.allToAll(in, out, count, t);
        for (long i = 0; i < count * n; i++) {
            int src = (int) (i / count);
            double want = Values.input(src, id, rank * count + i % count, t, null);
            if (Values.read(out, i, t) != want) {
                failures.add("allToAll " + t + " count=" + count + ": element " + i + " = " + Values.read(out, i, t)
                        + ", want " + want);
                return;
            }
        }
    }

    void sendRecv(DataType t, long count) {
        int id = next();
        MemorySegment out = a.asSlice(0, Math.max(count * t.byteSize(), 1));
        MemorySegment in = b.asSlice(0, Math.max(count * t.byteSize(), 1));
        for (long i = 0; i < count; i++) {
            Values.write(out, i, t, Values.input(rank, id, i, t, null));
        }
        int to = (rank + 1) % n;
        int from = (rank - 1 + n) % n;
        if (rank % 2 == 0) {
            comm.send(out, count, t, to);
            comm.recv(in, count, t, from);
        } else {
            comm.recv(in, count, t, from);
            comm.send(out, count, t, to);
        }
        for (long i = 0; i < count; i++) {
            double want = Values.input(from, id, i, t, null);
            if (Values.read(in, i, t) != want) {
                failures.add("send/recv " + t + " count=" + count + ": element " + i + " = " + Values.read(in, i, t)
                        + ", want " + want);
                return;
            }
        }
    }

    /** The heap-array convenience overloads (copied through registered scratch). */
    void heapArrays() {
        int id = next();
        float[] f = new float[1001];
        for (int i = 0; i < f.length; i++) {
            f[i] = (float) Values.input(rank, id, i, DataType.F32, ReduceOp.SUM);
        }
        comm.allReduce(f, ReduceOp.SUM);
        checkArray("allReduce(float[])", i -> f[i], f.length, DataType.F32, ReduceOp.SUM, id);
        int id2 = next();
        long[] l = new long[333];
        for (int i = 0; i < l.length; i++) {
            l[i] = (long) Values.input(rank, id2, i, DataType.I64, ReduceOp.MIN);
        }
        comm.allReduce(l, ReduceOp.MIN);
        checkArray("allReduce(long[])", i -> l[i], l.length, DataType.I64, ReduceOp.MIN, id2);
        int id3 = next();
        double[] d = new double[77];
        if (rank == n - 1) {
            for (int i = 0; i < d.length; i++) {
                d[i] = Values.input(rank, id3, i, DataType.F64, null);
            }
        }
        comm.broadcast(d, n - 1);
        for (int i = 0; i < d.length; i++) {
            if (d[i] != Values.input(n - 1, id3, i, DataType.F64, null)) {
                failures.add("broadcast(double[]) element " + i);
                break;
            }
        }
    }

    /** Async works complete in issue order and a synchronous call after them sees their results. */
    void asyncOrder() {
        int[] ids = new int[3];
        MemorySegment[] bufs = new MemorySegment[3];
        Work[] works = new Work[3];
        long count = 5000;
        for (int k = 0; k < 3; k++) {
            ids[k] = next();
            bufs[k] = a.asSlice(k * count * 4, count * 4);
            for (long i = 0; i < count; i++) {
                Values.write(bufs[k], i, DataType.I32, Values.input(rank, ids[k], i, DataType.I32, ReduceOp.SUM));
            }
            works[k] = comm.allReduceAsync(bufs[k], DataType.I32, ReduceOp.SUM);
        }
        int syncId = next();
        MemorySegment s = b.asSlice(0, 400);
        for (long i = 0; i < 100; i++) {
            Values.write(s, i, DataType.F32, Values.input(rank, syncId, i, DataType.F32, ReduceOp.MAX));
        }
        comm.allReduce(s, DataType.F32, ReduceOp.MAX);
        for (int k = 0; k < 3; k++) {
            if (!works[k].isDone()) {
                failures.add("async work " + k + " not done after a later synchronous call returned");
            }
            works[k].await(Duration.ofSeconds(30));
            final int kk = k;
            check("allReduceAsync #" + k, bufs[k], 0, count, DataType.I32, ReduceOp.SUM, ids[kk], (r, i) -> i);
        }
        check("sync after async", s, 0, 100, DataType.F32, ReduceOp.MAX, syncId, (r, i) -> i);
        Work w = comm.barrierAsync();
        w.future().join();
    }

    void barrierRounds() {
        for (int k = 0; k < 3; k++) {
            next();
            comm.barrier();
        }
    }

    // ---- checking ----------------------------------------------------------------------------

    private void check(String what, MemorySegment out, long base, long count, DataType t, ReduceOp op, int id,
                       Values.IndexMap map) {
        for (long i = 0; i < count; i++) {
            double want = Values.reference(n, id, i, t, op, map);
            double got = Values.read(out, base + i, t);
            if (!Values.close(got, want, t, op, n)) {
                failures.add(what + " (n=" + n + ", rank " + rank + "): element " + i + " = " + got + ", want " + want);
                return;
            }
        }
    }

    private interface Getter {
        double get(int i);
    }

    private void checkArray(String what, Getter g, int count, DataType t, ReduceOp op, int id) {
        for (int i = 0; i < count; i++) {
            double want = Values.reference(n, id, i, t, op, (r, x) -> x);
            if (!Values.close(g.get(i), want, t, op, n)) {
                failures.add(what + ": element " + i + " = " + g.get(i) + ", want " + want);
                return;
            }
        }
    }
}
