package io.rdma4j.transport.verbs;

/**
 * How a message is cut over the queue pairs of a connection: into at most one part per QP, each
 * part starting on a 128-byte boundary of the message (so a part never splits a cache line
 * another part writes), and no part smaller than {@link #MIN_PART} unless the message is. A part
 * larger than {@link #MAX_WORK_REQUEST} is posted as several work requests (an SGE length is a
 * 32-bit value).
 */
final class Striping {
    static final long ALIGNMENT = 128;
    /** Below this many bytes per QP, striping costs more in work requests than it gains. */
    static final long MIN_PART = 16 << 10;
    static final long MAX_WORK_REQUEST = 1L << 30;

    private Striping() {
    }

    /** Number of parts for {@code size} bytes over {@code qps} queue pairs: 0 for an empty message. */
    static int parts(long size, int qps) {
        if (size <= 0) {
            return 0;
        }
        int wanted = (int) Math.min(qps, Math.max(1, ceilDiv(size, MIN_PART)));
        return (int) ceilDiv(size, partLength(size, wanted));
    }

    /** The length of every part but the last, for a message cut into (at most) {@code parts}. */
    static long partLength(long size, int parts) {
        return alignUp(ceilDiv(size, parts), ALIGNMENT);
    }

    /** Offset of part {@code j} of a {@code size}-byte message cut into {@code parts}. */
    static long partOffset(long size, int parts, int j) {
        return Math.min(size, j * partLength(size, parts));
    }

    /** Length of part {@code j}. */
    static long partSize(long size, int parts, int j) {
        return Math.min(size, (j + 1) * partLength(size, parts)) - partOffset(size, parts, j);
    }

    /** Work requests needed to move {@code bytes} (at least one, for an empty transfer too). */
    static int workRequests(long bytes) {
        return (int) Math.max(1, ceilDiv(bytes, MAX_WORK_REQUEST));
    }

    static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }

    static long alignUp(long v, long alignment) {
        return (v + alignment - 1) & -alignment;
    }
}
