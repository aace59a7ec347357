package io.rdma4j.collectives;

/**
 * Element types of collective buffers. All multi-byte types are little-endian in memory (the
 * byte order of every platform the providers run on); {@link #U8} is an unsigned byte.
 */
public enum DataType {
    F32(4, 0),
    F64(8, 1),
    BF16(2, 2),
    F16(2, 3),
    I32(4, 4),
    I64(8, 5),
    U8(1, 6);

    private final int byteSize;
    private final int code;

    DataType(int byteSize, int code) {
        this.byteSize = byteSize;
        this.code = code;
    }

    /** Size of one element in bytes. */
    public int byteSize() {
        return byteSize;
    }

    /** Stable wire code (used in collective descriptors). */
    public int code() {
        return code;
    }

    public boolean isFloatingPoint() {
        return this == F32 || this == F64 || this == BF16 || this == F16;
    }

    /** Bytes occupied by {@code count} elements, rejecting negative or overflowing counts. */
    public long bytes(long count) {
        if (count < 0) {
            throw new IllegalArgumentException("negative element count " + count);
        }
        return Math.multiplyExact(count, (long) byteSize);
    }

    public static DataType fromCode(int code) {
        for (DataType t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown data type code " + code);
    }
}
