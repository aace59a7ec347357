package io.rdma4j.collectives.core;

/** Balanced splitting of element ranges: part {@code i} of {@code parts} starts at {@code total * i / parts}. */
public final class Partition {
    private Partition() {
    }

    public static long start(long total, int parts, long i) {
        return Math.multiplyExact(total, i) / parts; // element counts times chunk indices stay far below 2^63
    }

    public static long length(long total, int parts, long i) {
        return start(total, parts, i + 1) - start(total, parts, i);
    }

    public static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }
}
