package io.rdma4j.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;

/**
 * Single-thread copy bandwidth between two off-heap buffers of a given size (default 4M), in
 * GB/s of bytes copied: the reference the shared-memory provider is measured against (a
 * one-sided shm write is such a copy into the peer's mapping). Prints one number.
 */
public final class MemcpyBandwidth {
    private MemcpyBandwidth() {
    }

    public static void main(String[] args) {
        long bytes = args.length > 0 ? ByteSizes.parse(args[0]) : 4L << 20;
        System.out.printf(Locale.ROOT, "%.3f%n", measure(bytes, 1.5));
    }

    /** Best of several rounds of about {@code seconds / 5} each (the machine may be shared). */
    static double measure(long bytes, double seconds) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(bytes, 4096);
            MemorySegment b = arena.allocate(bytes, 4096);
            a.fill((byte) 1);
            b.fill((byte) 2);
            double best = 0;
            for (int round = 0; round < 6; round++) {
                long reps = 0;
                long t0 = System.nanoTime();
                long budget = (long) (seconds / 5 * 1e9);
                while (System.nanoTime() - t0 < budget) {
                    MemorySegment.copy(a, 0, b, 0, bytes);
                    reps++;
                }
                double gbs = (double) bytes * reps / ((System.nanoTime() - t0) / 1e9) / 1e9;
                if (round > 0) { // round 0 warms up the JIT and the pages
                    best = Math.max(best, gbs);
                }
            }
            return best;
        }
    }
}
