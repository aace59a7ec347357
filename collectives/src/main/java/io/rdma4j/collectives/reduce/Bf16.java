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
        int bits = Float.floatToRawIntBits(value);
        if ((bits & 0x7FFF_FFFF) > 0x7F80_0000) {
            return (short) ((bits >>> 16) | 0x0040);
        }
        int lsb = (bits >>> 16) & 1;
        return (short) ((bits + 0x7FFF + lsb) >>> 16);
    }
}
