package io.rdma4j.collectives.reduce;

/** bfloat16 (the upper 16 bits of an IEEE fp32) conversions. */
public final class Bf16 {
    private Bf16() {
    }

    /** Exact widening: a bf16 value is an fp32 with the low 16 mantissa bits zero. */
    public static float toFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /**
     * Narrows with round-to-nearest-even; NaN stays a (quiet) NaN rather than rounding into an
     * infinity, and values beyond the bf16 range become infinities.
     */
    public static short fromFloat(float value) {
        return fromBits(Float.floatToRawIntBits(value));
    }

    /** {@link #fromFloat} of the fp32 with these raw bits. */
    public static short fromBits(int bits) {
        return (short) roundBits(bits);
    }

    /** {@link #fromBits} in the low 16 bits of an int (kernels narrow to short in a separate pass). */
    static int roundBits(int bits) {
        int rounded = (bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16;
        // all ones for a NaN (magnitude above +inf), else zero: a select without a branch, so the
        // kernels' loops stay straight-line (and vectorizable) whatever the data
        int nan = (0x7F80_0000 - (bits & 0x7FFF_FFFF)) >> 31;
        return (rounded & ~nan) | (((bits >>> 16) | 0x0040) & nan);
    }
}
