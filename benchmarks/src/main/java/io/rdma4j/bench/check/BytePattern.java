package io.rdma4j.bench.check;

import java.lang.foreign.MemorySegment;

/**
 * The bytes a point-to-point benchmark's rank sends, and the check of what its peer received:
 * a tile of a prime length, different for every rank (a message that did not arrive, came
 * from the wrong sender or was cut short is caught; so is one shifted by anything but a
 * multiple of the tile's length). Filling and checking go tile by tile, so the pattern needs
 * no array as long as the largest message.
 */
public final class BytePattern {
    static final int TILE = 4093;

    private final MemorySegment tile;

    /** The pattern of {@code rank}. */
    public BytePattern(int rank) {
        byte[] b = new byte[TILE];
        for (int j = 0; j < TILE; j++) {
            b[j] = (byte) (j * 131 + (j >>> 8) * 7 + rank * 17 + 1);
        }
        tile = MemorySegment.ofArray(b);
    }

    /** Writes the first {@code bytes} of the pattern into {@code into}. */
    public void fill(MemorySegment into, long bytes) {
        for (long off = 0; off < bytes; off += TILE) {
            long n = Math.min(TILE, bytes - off);
            MemorySegment.copy(tile, 0, into, off, n);
        }
    }

    /** The offset of the first of {@code bytes} in {@code got} that differs from the pattern, or -1 if none does. */
    public long firstDifference(MemorySegment got, long bytes) {
        for (long off = 0; off < bytes; off += TILE) {
            long n = Math.min(TILE, bytes - off);
            long at = MemorySegment.mismatch(got, off, off + n, tile, 0, n);
            if (at >= 0) {
                return off + at;
            }
        }
        return -1;
    }
}
