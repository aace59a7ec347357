package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kernels against straightforward scalar code, for every type and operator, at unaligned
 * offsets, in place and out of place, native and heap; plus the documented bf16/fp16 rounding
 * and integer AVG semantics on hand-picked values.
 */
class ReducerTest {
    private static final ValueLayout.OfShort S = ValueLayout.JAVA_SHORT_UNALIGNED;

    /** Expected a OP b for one element, written independently of the kernels. */
    private static void expect(DataType t, ReduceOp op, MemorySegment a, MemorySegment b, MemorySegment out, long i) {
        switch (t) {
            case F32 -> {
                float x = a.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i), y = b.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i);
                out.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, switch (op) {
                    case SUM, AVG -> x + y; case PROD -> x * y; case MIN -> x < y ? x : y; case MAX -> x > y ? x : y; });
            }
            case F64 -> {
                double x = a.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i), y = b.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i);
                out.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i, switch (op) {
                    case SUM, AVG -> x + y; case PROD -> x * y; case MIN -> x < y ? x : y; case MAX -> x > y ? x : y; });
            }
            case I32 -> {
                int x = a.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i), y = b.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i);
                out.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, switch (op) {
                    case SUM, AVG -> x + y; case PROD -> x * y; case MIN -> x < y ? x : y; case MAX -> x > y ? x : y; });
            }
            case I64 -> {
                long x = a.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i), y = b.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
                out.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, switch (op) {
                    case SUM, AVG -> x + y; case PROD -> x * y; case MIN -> x < y ? x : y; case MAX -> x > y ? x : y; });
            }
            case U8 -> {
                int x = a.get(ValueLayout.JAVA_BYTE, i) & 0xFF, y = b.get(ValueLayout.JAVA_BYTE, i) & 0xFF;
                out.set(ValueLayout.JAVA_BYTE, i, (byte) switch (op) {
                    case SUM, AVG -> x + y; case PROD -> x * y; case MIN -> x < y ? x : y; case MAX -> x > y ? x : y; });
            }
            case BF16, F16 -> {
                float x = half(t, a.getAtIndex(S, i)), y = half(t, b.getAtIndex(S, i));
                float r = switch (op) { case SUM, AVG -> x + y; case PROD -> x * y; case MIN -> x < y ? x : y; case MAX -> x > y ? x : y; };
                out.setAtIndex(S, i, toHalf(t, r));
            }
        }
    }

    static float half(DataType t, short s) {
        return t == DataType.F16 ? Float.float16ToFloat(s) : Float.intBitsToFloat((s & 0xFFFF) << 16);
    }

    /** Round-to-nearest-even by comparing the two neighbouring bf16 values (no bit tricks). */
    static short toHalf(DataType t, float v) {
        if (t == DataType.F16) {
            return Float.floatToFloat16(v);
        }
        int bits = Float.floatToIntBits(v);
        short down = (short) (bits >>> 16);
        short up = (short) (down + 1);
        double dl = Math.abs((double) v - Float.intBitsToFloat((down & 0xFFFF) << 16));
        double du = Math.abs((double) Float.intBitsToFloat((up & 0xFFFF) << 16) - v);
        if (dl < du) {
            return down;
        }
        if (du < dl) {
            return up;
        }
        return (down & 1) == 0 ? down : up;
    }

    private static void fillRandom(MemorySegment s, DataType t, long count, Random rnd) {
        for (long i = 0; i < count; i++) {
            switch (t) {
                case F32 -> s.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) rnd.nextGaussian() * 100);
                case F64 -> s.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i, rnd.nextGaussian() * 1e6);
                case I32 -> s.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, rnd.nextInt());
                case I64 -> s.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
                case U8 -> s.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
                case BF16 -> s.setAtIndex(S, i, (short) (Float.floatToIntBits((float) rnd.nextGaussian() * 10) >>> 16));
                case F16 -> s.setAtIndex(S, i, Float.floatToFloat16((float) rnd.nextGaussian() * 10));
            }
        }
    }

    @Test
    void everyKernelMatchesScalarCode() {
        Random rnd = new Random(42);
        int count = 2 * Blocks.BLOCK + 37; // kernels in blocks (half, staged) get two full ones and a tail
        try (Arena arena = Arena.ofConfined()) {
            for (DataType t : DataType.values()) {
                for (ReduceOp op : ReduceOp.values()) {
                  for (KernelLoops loops : KernelLoops.values()) {
                    Reducer red = Reducers.in(loops, t, op);
                    assertEquals(t, red.type());
                    assertEquals(op, red.op());
                    long bytes = (long) count * t.byteSize();
                    // unaligned offsets inside larger native segments, and a heap operand
                    MemorySegment a = arena.allocate(bytes + 3).asSlice(3, bytes);
                    MemorySegment b = MemorySegment.ofArray(new byte[(int) bytes + 1]).asSlice(1, bytes);
                    MemorySegment d = arena.allocate(bytes + 1).asSlice(1, bytes);
                    MemorySegment want = arena.allocate(bytes);
                    fillRandom(a, t, count, rnd);
                    fillRandom(b, t, count, rnd);
                    for (long i = 0; i < count; i++) {
                        expect(t, op, a, b, want, i);
                    }
                    red.reduceInto(d, 0, a, 0, b, 0, count);
                    assertEquals(-1, want.mismatch(d), t + " " + op + " " + loops + " out of place");
                    red.reduce(a, b, count); // in place
                    assertEquals(-1, want.mismatch(a), t + " " + op + " " + loops + " in place");
                  }
                }
            }
        }
    }

    @Test
    void kernelsTouchOnlyTheirRange() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment d = arena.allocate(64);
            MemorySegment s = arena.allocate(64);
            s.fill((byte) 1);
            d.fill((byte) 7);
            Reducer.of(DataType.U8, ReduceOp.SUM).reduce(d, 10, s, 20, 5);
            for (int i = 0; i < 64; i++) {
                assertEquals(i >= 10 && i < 15 ? 8 : 7, d.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
            assertThrows(IndexOutOfBoundsException.class, () -> Reducer.of(DataType.F32, ReduceOp.SUM).reduce(d, 0, s, 0, 17));
        }
    }

    /**
     * The arithmetic kernels reach native operands of {@link ArithmeticReducer#SIMD_MIN_BYTES}
     * and more by address ({@link WholeMemory}), so the checks a segment makes on each access are
     * theirs to make: each misuse throws what the segment API throws, before anything is written,
     * for the destination and for either operand.
     */
    @Test
    void nativeOperandsAreCheckedAsTheSegmentApiChecksThem() throws Exception {
        Reducer sum = Reducer.of(DataType.F32, ReduceOp.SUM);
        int bytes = (int) ArithmeticReducer.SIMD_MIN_BYTES;
        int n = bytes / 4;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment d = arena.allocate(bytes);
            MemorySegment a = arena.allocate(bytes);
            MemorySegment b = arena.allocate(bytes);
            d.fill((byte) 7);
            assertThrows(IndexOutOfBoundsException.class, () -> sum.reduceInto(d, 4, a, 0, b, 0, n));
            assertThrows(IndexOutOfBoundsException.class, () -> sum.reduceInto(d, 0, a, 8, b, 0, n));
            assertThrows(IndexOutOfBoundsException.class, () -> sum.reduceInto(d, 0, a, 0, b, -4, n));
            assertThrows(IllegalArgumentException.class, () -> sum.reduceInto(d.asReadOnly(), 0, a, 0, b, 0, n));
            assertEquals(7, d.get(ValueLayout.JAVA_BYTE, 0), "nothing was written before a check failed");
            sum.reduceInto(d, 0, a.asReadOnly(), 0, b.asReadOnly(), 0, n); // operands are only read
            assertEquals(0f, d.get(ValueLayout.JAVA_FLOAT, bytes - 4));
            d.fill((byte) 7);
            Throwable[] elsewhere = new Throwable[3];
            Thread other = new Thread(() -> {
                for (int i = 0; i < elsewhere.length; i++) {
                    try (Arena own = Arena.ofConfined()) {
                        MemorySegment mine = own.allocate(bytes);
                        // the test thread's confined segment as destination, then as either operand
                        sum.reduceInto(i == 0 ? d : mine, 0, i == 1 ? d : mine, 0, i == 2 ? d : mine, 0, n);
                    } catch (Throwable t) {
                        elsewhere[i] = t;
                    }
                }
            });
            other.start();
            other.join();
            for (int i = 0; i < elsewhere.length; i++) {
                assertTrue(elsewhere[i] instanceof WrongThreadException, "position " + i + ": " + elsewhere[i]);
            }
            assertEquals(7, d.get(ValueLayout.JAVA_BYTE, 0), "nothing was written before a check failed");
        }
        MemorySegment closed;
        try (Arena arena = Arena.ofConfined()) {
            closed = arena.allocate(bytes);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment live = arena.allocate(bytes);
            assertThrows(IllegalStateException.class, () -> sum.reduceInto(live, 0, closed, 0, live, 0, n));
            assertThrows(IllegalStateException.class, () -> sum.reduceInto(closed, 0, live, 0, live, 0, n));
        }
    }

    private static short bf(float f) {
        return (short) (Float.floatToIntBits(f) >>> 16); // exact for the values used
    }

    @Test
    void bf16RoundsToNearestEven() {
        // halfway cases go to the even neighbour, anything above halfway goes up
        assertEquals(0x3F80, Bf16.fromFloat(1f + 0x1p-8f) & 0xFFFF);
        assertEquals(0x3F82, Bf16.fromFloat(1f + 3 * 0x1p-8f) & 0xFFFF);
        assertEquals(0x3F81, Bf16.fromFloat(1f + 0x1p-8f + 0x1p-20f) & 0xFFFF);
        assertEquals(0xBF80, Bf16.fromFloat(-1f - 0x1p-8f) & 0xFFFF);
        assertTrue(Float.isNaN(Bf16.toFloat(Bf16.fromFloat(Float.NaN))));
        // NaNs whose payload is all in the low half (rounding would carry into inf or the sign)
        assertEquals(0x7FC0, Bf16.fromBits(0x7F80_0001) & 0xFFFF);
        assertEquals(0xFFFF, Bf16.fromBits(0xFFFF_FFFF) & 0xFFFF);
        assertEquals(Float.POSITIVE_INFINITY, Bf16.toFloat(Bf16.fromFloat(Float.MAX_VALUE)));
        Random rnd = new Random(7);
        for (int i = 0; i < 100_000; i++) {
            float f = Float.intBitsToFloat(rnd.nextInt());
            if (!Float.isNaN(f) && !Float.isInfinite(f) && Math.abs(f) < 3e38f) {
                assertEquals(toHalf(DataType.BF16, f), Bf16.fromFloat(f), "bf16 of " + f);
            }
        }
    }

    @Test
    void halfPrecisionRoundsAfterEveryStep() {
        try (Arena arena = Arena.ofConfined()) {
            // bf16: 1 + 2^-8 is a tie and rounds to 1; adding 2^-8 again therefore stays 1, whereas
            // rounding once at the end would have given 1 + 2^-7
            MemorySegment acc = arena.allocate(2);
            MemorySegment x = arena.allocate(2);
            acc.set(S, 0, bf(1f));
            x.set(S, 0, bf(0x1p-8f));
            Reducer sum = Reducer.of(DataType.BF16, ReduceOp.SUM);
            sum.reduce(acc, x, 1);
            sum.reduce(acc, x, 1);
            assertEquals(1f, Bf16.toFloat(acc.get(S, 0)));
            // fp16: spacing is 2 in [2048, 4096): 2048 + 1 ties to 2048, 2048 + 3 ties to 2052
            Reducer h = Reducer.of(DataType.F16, ReduceOp.SUM);
            acc.set(S, 0, Float.floatToFloat16(2048f));
            x.set(S, 0, Float.floatToFloat16(1f));
            h.reduce(acc, x, 1);
            assertEquals(2048f, Float.float16ToFloat(acc.get(S, 0)));
            x.set(S, 0, Float.floatToFloat16(3f));
            h.reduce(acc, x, 1);
            assertEquals(2052f, Float.float16ToFloat(acc.get(S, 0)));
            // overflow becomes infinity
            acc.set(S, 0, Float.floatToFloat16(65504f));
            x.set(S, 0, Float.floatToFloat16(65504f));
            h.reduce(acc, x, 1);
            assertEquals(Float.POSITIVE_INFINITY, Float.float16ToFloat(acc.get(S, 0)));
        }
    }

    @Test
    void avgIsSumThenOneDivision() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment d = arena.allocate(8);
            // integers truncate toward zero: -7 / 2 = -3
            d.set(ValueLayout.JAVA_INT_UNALIGNED, 0, -7);
            Reducer.of(DataType.I32, ReduceOp.AVG).finish(d, 0, 1, 2);
            assertEquals(-3, d.get(ValueLayout.JAVA_INT_UNALIGNED, 0));
            // u8: the sum wraps modulo 256 first (250 + 10 = 4), then 4 / 2
            MemorySegment a = arena.allocate(1);
            MemorySegment b = arena.allocate(1);
            a.set(ValueLayout.JAVA_BYTE, 0, (byte) 250);
            b.set(ValueLayout.JAVA_BYTE, 0, (byte) 10);
            Reducer u8 = Reducer.of(DataType.U8, ReduceOp.AVG);
            u8.reduce(a, b, 1);
            u8.finish(a, 0, 1, 2);
            assertEquals(2, a.get(ValueLayout.JAVA_BYTE, 0));
            // u8 min/max compare unsigned
            a.set(ValueLayout.JAVA_BYTE, 0, (byte) 200);
            b.set(ValueLayout.JAVA_BYTE, 0, (byte) 100);
            Reducer.of(DataType.U8, ReduceOp.MAX).reduce(a, b, 1);
            assertEquals(200, a.get(ValueLayout.JAVA_BYTE, 0) & 0xFF);
            // bf16: 1 + 2 + 4 = 7, then 7/3 rounded once to bf16
            MemorySegment h = arena.allocate(2);
            h.set(S, 0, bf(7f));
            Reducer.of(DataType.BF16, ReduceOp.AVG).finish(h, 0, 1, 3);
            assertEquals(toHalf(DataType.BF16, 7f / 3), h.get(S, 0));
            // f32 AVG divides (not multiplies by a reciprocal)
            MemorySegment f = arena.allocate(4);
            f.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 0, 10f);
            Reducer.of(DataType.F32, ReduceOp.AVG).finish(f, 0, 1, 3);
            assertEquals(10f / 3f, f.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0));
            // other operators leave fully reduced data alone
            Reducer.of(DataType.F32, ReduceOp.SUM).finish(f, 0, 1, 3);
            assertEquals(10f / 3f, f.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0));
            assertThrows(IllegalArgumentException.class, () -> Reducer.of(DataType.F32, ReduceOp.AVG).finish(f, 0, 1, 0));
        }
    }

    @Test
    void halfPrecisionAvgDividesEveryElementOnceAndRoundsIt() {
        // the blocked division against the per-element formula of Reducer's contract, across block edges
        Random rnd = new Random(13);
        int count = 2 * Blocks.BLOCK + 11;
        short[] special = {0, (short) 0x8000, 0x7F80, (short) 0xFF80, 0x7FC0, 0x0001, 0x7F7F, 0x3F80, // bf16
                0x7C00, (short) 0xFC00, 0x7E00, 0x0001, 0x7BFF, 0x3C00}; // fp16
        try (Arena arena = Arena.ofConfined()) {
            for (DataType t : new DataType[] {DataType.BF16, DataType.F16}) {
                for (int contributors : new int[] {1, 3, 7}) {
                    MemorySegment d = arena.allocate(2L * count + 1).asSlice(1, 2L * count);
                    short[] before = new short[count];
                    for (int i = 0; i < count; i++) {
                        before[i] = i % 5 == 0 ? special[rnd.nextInt(special.length)] : (short) rnd.nextInt();
                        d.setAtIndex(S, i, before[i]);
                    }
                  for (KernelLoops loops : KernelLoops.values()) {
                    for (int i = 0; i < count; i++) {
                        d.setAtIndex(S, i, before[i]);
                    }
                    Reducers.in(loops, t, ReduceOp.AVG).finish(d, 0, count, contributors);
                    for (int i = 0; i < count; i++) {
                        short want = toHalf(t, half(t, before[i]) / contributors);
                        short got = d.getAtIndex(S, i);
                        if (Float.isNaN(half(t, want))) {
                            assertTrue(Float.isNaN(half(t, got)), t + " element " + i);
                        } else {
                            assertEquals(want, got, t + " /" + contributors + " " + loops + " element " + i);
                        }
                    }
                  }
                }
            }
        }
    }

    @Test
    void kernelsAreSymmetric() {
        // a OP b == b OP a bit for bit, which makes recursive doubling agree on every rank
        Random rnd = new Random(3);
        try (Arena arena = Arena.ofConfined()) {
            for (DataType t : DataType.values()) {
                for (ReduceOp op : ReduceOp.values()) {
                    MemorySegment a = arena.allocate(256L * t.byteSize());
                    MemorySegment b = arena.allocate(256L * t.byteSize());
                    MemorySegment ab = arena.allocate(256L * t.byteSize());
                    MemorySegment ba = arena.allocate(256L * t.byteSize());
                    fillRandom(a, t, 256, rnd);
                    fillRandom(b, t, 256, rnd);
                    Reducer r = Reducer.of(t, op);
                    r.reduceInto(ab, 0, a, 0, b, 0, 256);
                    r.reduceInto(ba, 0, b, 0, a, 0, 256);
                    assertEquals(-1, ab.mismatch(ba), t + " " + op);
                }
            }
        }
    }

    /** Values where SIMD and scalar code could plausibly differ: signed zeros, NaN, infinities, subnormals, extremes. */
    private static void fillSpecial(MemorySegment s, DataType t, long count, Random rnd) {
        float[] f = {0f, -0f, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.MIN_VALUE, -Float.MAX_VALUE, 1f};
        double[] d = {0d, -0d, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.MIN_VALUE, Double.MAX_VALUE, -1d};
        int[] i32 = {0, -1, Integer.MIN_VALUE, Integer.MAX_VALUE, 1, 65_537, -65_537, 7};
        long[] i64 = {0, -1, Long.MIN_VALUE, Long.MAX_VALUE, 1, 1L << 33, -(1L << 33), 7};
        for (long i = 0; i < count; i++) {
            int k = rnd.nextInt(8);
            switch (t) {
                case F32 -> s.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, f[k]);
                case F64 -> s.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i, d[k]);
                case I32 -> s.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, i32[k]);
                case I64 -> s.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, i64[k]);
                default -> throw new IllegalArgumentException(t.toString());
            }
        }
    }

    @Test
    void simdKernelsAreBitIdenticalToScalarOnes() {
        DataType[] simdTypes = {DataType.F32, DataType.F64, DataType.I32, DataType.I64};
        assertSimdKernelsOn(ReduceOp.SUM);
        Random rnd = new Random(11);
        try (Arena arena = Arena.ofConfined()) {
            for (DataType t : simdTypes) {
                for (ReduceOp op : ReduceOp.values()) {
                    for (int count : new int[] {1, 15, 16, 17, 1000 + 13}) {
                        long bytes = (long) count * t.byteSize();
                        MemorySegment a = arena.allocate(bytes + 5).asSlice(5, bytes);
                        MemorySegment b = MemorySegment.ofArray(new long[count + 1]).asSlice(3, bytes);
                        MemorySegment simd = arena.allocate(bytes);
                        MemorySegment scalar = arena.allocate(bytes);
                        if (rnd.nextBoolean()) {
                            fillSpecial(a, t, count, rnd);
                        } else {
                            fillRandom(a, t, count, rnd);
                        }
                        fillSpecial(b, t, count, rnd);
                        Reducer.of(t, op).reduceInto(simd, 0, a, 0, b, 0, count);
                        Reducers.in(KernelLoops.SEGMENT, t, op).reduceInto(scalar, 0, a, 0, b, 0, count);
                        assertEquals(-1, scalar.mismatch(simd), t + " " + op + " x" + count);
                        Reducer.of(t, op).reduce(a, b, count); // in place: dst is operand a
                        assertEquals(-1, scalar.mismatch(a), t + " " + op + " x" + count + " in place");
                    }
                }
            }
        }
    }

    @Test
    void simdAvgDivisionIsTheScalarDivisionBitForBit() {
        // AVG's division of whole vectors (F32/F64 from SIMD_MIN_BYTES) against x / n computed here,
        // element by element: any bit pattern, across the vector tail, at an unaligned offset
        assertSimdKernelsOn(ReduceOp.AVG);
        Random rnd = new Random(14);
        try (Arena arena = Arena.ofConfined()) {
            for (DataType t : new DataType[] {DataType.F32, DataType.F64}) {
                for (int count : new int[] {256, 257, 4096 + 13}) {
                    for (int contributors : new int[] {2, 3, 7}) {
                        MemorySegment d = arena.allocate(t.byteSize() * (count + 1L)).asSlice(3, t.byteSize() * count);
                        double[] before = new double[count];
                        for (int i = 0; i < count; i++) {
                            // half any bit pattern (NaNs, infinities, subnormals), half ordinary values
                            before[i] = i % 2 == 0 ? randomBits(t, rnd) : rnd.nextDouble() * 1000;
                            setAt(t, d, i, before[i]);
                        }
                        Reducer.of(t, ReduceOp.AVG).finish(d, 0, count, contributors);
                        for (int i = 0; i < count; i++) {
                            double want = t == DataType.F32 ? (float) before[i] / contributors : before[i] / contributors;
                            double got = t == DataType.F32 ? d.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i)
                                    : d.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i);
                            assertTrue(Double.isNaN(want) ? Double.isNaN(got) : Double.doubleToRawLongBits(want) == Double.doubleToRawLongBits(got),
                                    t + " element " + i + " of " + count + " / " + contributors + ": " + want + " != " + got);
                        }
                    }
                }
            }
        }
    }

    /** The test JVM runs with --add-modules jdk.incubator.vector (pom), so of() is the SIMD kernel. */
    private static void assertSimdKernelsOn(ReduceOp op) {
        assertNotSame(Reducers.in(KernelLoops.SEGMENT, DataType.F32, op), Reducer.of(DataType.F32, op),
                "SIMD kernels are off in the test JVM: " + Simd.describe());
    }

    /** A value of type {@code t} from random bits, widened to double exactly. */
    private static double randomBits(DataType t, Random rnd) {
        return t == DataType.F32 ? Float.intBitsToFloat(rnd.nextInt()) : Double.longBitsToDouble(rnd.nextLong());
    }

    private static void setAt(DataType t, MemorySegment s, int i, double v) {
        if (t == DataType.F32) {
            s.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) v);
        } else {
            s.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i, v);
        }
    }

    @Test
    void stagedKernelsAreBitIdenticalToSegmentOnes() {
        // the JVMs without C2 run the staged kernels; compared here with the per-element segment
        // loops on special values, at block edges, at unaligned offsets, with AVG's division
        DataType[] types = {DataType.F32, DataType.F64, DataType.I32, DataType.I64};
        Random rnd = new Random(12);
        try (Arena arena = Arena.ofConfined()) {
            for (DataType t : types) {
                for (ReduceOp op : ReduceOp.values()) {
                    Reducer staged = Reducers.in(KernelLoops.STAGED, t, op);
                    Reducer segment = Reducers.in(KernelLoops.SEGMENT, t, op);
                    assertNotSame(staged, segment);
                    for (int count : new int[] {1, 17, Blocks.BLOCK - 1, Blocks.BLOCK, Blocks.BLOCK + 1, 3 * Blocks.BLOCK + 5}) {
                        long bytes = (long) count * t.byteSize();
                        MemorySegment a = arena.allocate(bytes + 5).asSlice(5, bytes);
                        MemorySegment b = MemorySegment.ofArray(new long[count + 1]).asSlice(3, bytes);
                        MemorySegment got = arena.allocate(bytes + 1).asSlice(1, bytes);
                        MemorySegment want = arena.allocate(bytes);
                        fillSpecial(a, t, count, rnd);
                        fillRandom(b, t, count, rnd);
                        staged.reduceInto(got, 0, a, 0, b, 0, count);
                        segment.reduceInto(want, 0, a, 0, b, 0, count);
                        assertEquals(-1, want.mismatch(got), t + " " + op + " x" + count);
                        staged.reduce(a, b, count); // in place: dst is operand a
                        assertEquals(-1, want.mismatch(a), t + " " + op + " x" + count + " in place");
                        staged.finish(got, 0, count, 3);
                        segment.finish(want, 0, count, 3);
                        assertEquals(-1, want.mismatch(got), t + " " + op + " x" + count + " finished");
                    }
                }
            }
        }
    }

    @Test
    void stagedKernelsAllocateNothingOnceTheThreadHasItsBlocks() {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        try (Arena arena = Arena.ofConfined()) {
            int count = 2 * Blocks.BLOCK + 3;
            MemorySegment a = arena.allocate(8L * count);
            MemorySegment b = arena.allocate(8L * count);
            for (DataType t : new DataType[] {DataType.F32, DataType.F64, DataType.I32, DataType.I64}) {
                Reducer avg = Reducers.in(KernelLoops.STAGED, t, ReduceOp.AVG);
                Reducer max = Reducers.in(KernelLoops.STAGED, t, ReduceOp.MAX);
                long least = Long.MAX_VALUE;
                for (int round = 0; round < 5; round++) { // the first rounds allocate the blocks and compile
                    long before = mx.getCurrentThreadAllocatedBytes();
                    for (int i = 0; i < 200; i++) {
                        avg.reduce(a, b, count);
                        avg.finish(a, 0, count, 2);
                        max.reduceInto(a, 0, a, 0, b, 0, count);
                    }
                    least = Math.min(least, mx.getCurrentThreadAllocatedBytes() - before);
                }
                assertEquals(0, least, t + ": bytes allocated by 600 staged kernel calls");
            }
        }
    }

    @Test
    void floatMinMaxFollowMathMinOnBothPaths() {
        try (Arena arena = Arena.ofConfined()) {
            int n = 64; // several whole vectors
            MemorySegment a = arena.allocate(4L * n);
            MemorySegment b = arena.allocate(4L * n);
            MemorySegment d = arena.allocate(4L * n);
            for (int i = 0; i < n; i++) {
                a.setAtIndex(ValueLayout.JAVA_FLOAT, i, i % 2 == 0 ? -0f : Float.NaN);
                b.setAtIndex(ValueLayout.JAVA_FLOAT, i, i % 2 == 0 ? 0f : 1f);
            }
            for (Reducer r : new Reducer[] {Reducer.of(DataType.F32, ReduceOp.MIN), Reducers.in(KernelLoops.SEGMENT, DataType.F32, ReduceOp.MIN)}) {
                r.reduceInto(d, 0, b, 0, a, 0, n);
                for (int i = 0; i < n; i++) {
                    float got = d.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                    assertEquals(Float.floatToRawIntBits(Math.min(b.getAtIndex(ValueLayout.JAVA_FLOAT, i),
                            a.getAtIndex(ValueLayout.JAVA_FLOAT, i))), Float.floatToRawIntBits(got), r + " element " + i);
                }
            }
            Reducer.of(DataType.F32, ReduceOp.MAX).reduceInto(d, 0, a, 0, b, 0, n);
            assertEquals(Float.floatToRawIntBits(0f), Float.floatToRawIntBits(d.getAtIndex(ValueLayout.JAVA_FLOAT, 0)));
            assertTrue(Float.isNaN(d.getAtIndex(ValueLayout.JAVA_FLOAT, 1)));
        }
    }

    @Test
    void simdSwitch() {
        assertTrue(Simd.decide(null, null, true));
        assertFalse(Simd.decide(null, null, false));
        assertFalse(Simd.decide("false", null, true));
        assertFalse(Simd.decide(null, "0", true));
        assertTrue(Simd.decide("true", "0", true), "the property wins over the environment");
        assertFalse(Simd.decide("true", null, false), "no module, no SIMD, whatever the setting");
    }

    @Test
    void onlyAJitWithC2GetsTheVectorKernels() {
        // java.vm.info as HotSpot 25 reports it: default, -XX:TieredStopAtLevel=1, -Xint, -XX:-TieredCompilation
        assertTrue(Simd.compilesVectors("mixed mode, sharing"));
        assertFalse(Simd.compilesVectors("mixed mode, emulated-client, sharing"));
        assertFalse(Simd.compilesVectors("interpreted mode, sharing"));
        assertTrue(Simd.compilesVectors("mixed mode"));
        assertFalse(Simd.compilesVectors("compiled mode, emulated-client"));
        assertEquals(KernelLoops.VECTOR, Simd.loops(true, true));
        assertEquals(KernelLoops.SEGMENT, Simd.loops(false, true));
        assertEquals(KernelLoops.STAGED, Simd.loops(false, false), "a JVM without C2 gets the kernels staged in arrays");
    }
}
