package io.rdma4j.transport.verbs;

/**
 * The 32-bit immediate of every RDMA write-with-immediate this provider sends: two type bits and
 * a payload. The receiver learns from it which of its requests (or which slot of its immediate
 * ring) the write completes; sizes and user values travel in memory the write fills, because a
 * user's immediate may use all 32 bits.
 *
 * <pre>
 * DATA   00 | generation (10 bits) | receive slot (20 bits)   a part of an isend's data arrived
 * ERROR  01 | generation (10 bits) | receive slot (20 bits)   the matching isend was too large
 * USER   10 | ring index (30 bits)                            a part of a one-sided write with immediate
 * EAGER  11 | eager ring index (30 bits)                      a small isend, header and payload in one write
 * </pre>
 */
final class Immediate {
    static final int DATA = 0;
    static final int ERROR = 1;
    static final int USER = 2;
    static final int EAGER = 3;
    static final int SLOT_BITS = 20;
    static final int MAX_SLOTS = 1 << SLOT_BITS;
    static final int GENERATION_MASK = (1 << 10) - 1;
    static final int INDEX_MASK = (1 << 30) - 1;

    private Immediate() {
    }

    static int data(int slot, int generation) {
        return receive(DATA, slot, generation);
    }

    static int error(int slot, int generation) {
        return receive(ERROR, slot, generation);
    }

    private static int receive(int type, int slot, int generation) {
        if (slot < 0 || slot >= MAX_SLOTS) {
            throw new IllegalArgumentException("receive slot " + slot + " does not fit " + SLOT_BITS + " bits");
        }
        return type << 30 | (generation & GENERATION_MASK) << SLOT_BITS | slot;
    }

    static int user(long ringIndex) {
        return USER << 30 | (int) (ringIndex & INDEX_MASK);
    }

    static int eager(long ringIndex) {
        return EAGER << 30 | (int) (ringIndex & INDEX_MASK);
    }

    static int type(int imm) {
        return imm >>> 30;
    }

    static int slot(int imm) {
        return imm & (MAX_SLOTS - 1);
    }

    /** The low 10 bits of the receive request's generation. */
    static int generation(int imm) {
        return (imm >>> SLOT_BITS) & GENERATION_MASK;
    }

    static int ringIndex(int imm) {
        return imm & INDEX_MASK;
    }

    /**
     * How far ring index {@code index} (30 bits) is ahead of {@code expected}, the full count of
     * the next one due: 0 for that one, and for one from before it nearly 2^30, so that a single
     * bound checks both sides of a window across the wrap of the index.
     */
    static long ahead(int index, long expected) {
        return (index - expected) & INDEX_MASK;
    }
}
