package io.rdma4j.bench.check;

import io.rdma4j.collectives.DataType;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Reads and writes single elements of every {@link DataType} as doubles, for filling test data
 * and checking results. Deliberately independent of the library's own kernels and bf16/fp16
 * code, so a bug there cannot hide in the reference.
 */
public final class ElementCodec {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;

    private ElementCodec() {
    }

    public static void put(MemorySegment s, DataType t, long index, double v) {
        long off = index * t.byteSize();
        switch (t) {
            case F32 -> s.set(F32, off, (float) v);
            case F64 -> s.set(F64, off, v);
            case F16 -> s.set(I16, off, Float.floatToFloat16((float) v));
            case BF16 -> s.set(I16, off, toBf16((float) v));
            case I32 -> s.set(I32, off, (int) (long) v);
            case I64 -> s.set(I64, off, (long) v);
            case U8 -> s.set(ValueLayout.JAVA_BYTE, off, (byte) (long) v);
        }
    }

    public static double get(MemorySegment s, DataType t, long index) {
        long off = index * t.byteSize();
        return switch (t) {
            case F32 -> s.get(F32, off);
            case F64 -> s.get(F64, off);
            case F16 -> Float.float16ToFloat(s.get(I16, off));
            case BF16 -> fromBf16(s.get(I16, off));
            case I32 -> s.get(I32, off);
            case I64 -> s.get(I64, off);
            case U8 -> Byte.toUnsignedInt(s.get(ValueLayout.JAVA_BYTE, off));
        };
    }

    /** The value {@code v} becomes when stored as {@code t} (rounding or wrapping as the type does). */
    public static double quantize(DataType t, double v) {
        return switch (t) {
            case F32 -> (float) v;
            case F64 -> v;
            case F16 -> Float.float16ToFloat(Float.floatToFloat16((float) v));
            case BF16 -> fromBf16(toBf16((float) v));
            case I32 -> (int) (long) v;
            case I64 -> (long) v;
            case U8 -> ((long) v) & 0xFF;
        };
    }

    /** fp32 to bfloat16 with round-to-nearest-even; NaN stays a (quiet) NaN. */
    static short toBf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (short) ((bits >>> 16) | 0x40);
        }
        int roundingBias = 0x7FFF + ((bits >>> 16) & 1);
        return (short) ((bits + roundingBias) >>> 16);
    }

    static float fromBf16(short h) {
        return Float.intBitsToFloat((h & 0xFFFF) << 16);
    }
}
