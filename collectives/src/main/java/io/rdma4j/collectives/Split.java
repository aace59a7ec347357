package io.rdma4j.collectives;

import io.rdma4j.collectives.core.Group;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.TreeSet;
import java.util.stream.IntStream;

/**
 * One {@link Communicator#split}: every rank contributes (color, key, its proposed context id);
 * once the contributions are gathered, every rank derives the same context id per color (the
 * largest proposal plus the color's index among the colors in use) and the same member order
 * (by key, then by parent rank).
 */
final class Split {
    private static final int FIELDS = 3;

    private final int rank;
    private final int color;
    /** (color, key, proposed context id) of every parent rank; heap memory: see {@link #contributions}. */
    private final long[] all;

    Split(int parentSize, int parentRank, int color, int key, long proposedContext) {
        this.rank = parentRank;
        this.color = color;
        this.all = new long[FIELDS * parentSize];
        all[FIELDS * parentRank] = color;
        all[FIELDS * parentRank + 1] = key;
        all[FIELDS * parentRank + 2] = proposedContext;
    }

    /**
     * Every rank's contribution, this rank's filled in; gathered in place. Heap memory on
     * purpose: it is copied through registered scratch, so no transient native segment ever
     * enters the transport's registration cache.
     */
    MemorySegment contributions() {
        return MemorySegment.ofArray(all);
    }

    /** Elements (I64) each rank contributes. */
    static long fieldsPerRank() {
        return FIELDS;
    }

    private int size() {
        return all.length / FIELDS;
    }

    private long base() {
        long base = 0;
        for (int r = 0; r < size(); r++) {
            base = Math.max(base, all[FIELDS * r + 2]);
        }
        return base;
    }

    private TreeSet<Long> colors() {
        TreeSet<Long> colors = new TreeSet<>();
        for (int r = 0; r < size(); r++) {
            if (all[FIELDS * r] >= 0) {
                colors.add(all[FIELDS * r]);
            }
        }
        return colors;
    }

    /** The first context id not used by any of the new communicators. */
    long contextEnd() {
        return base() + colors().size();
    }

    /** This rank's new group, or null for a negative color. */
    Group group(Group parent) {
        if (color < 0) {
            return null;
        }
        long ctx = base() + colors().headSet((long) color).size();
        Integer[] picked = IntStream.range(0, size()).filter(r -> all[FIELDS * r] == color).boxed()
                .toArray(Integer[]::new);
        Arrays.sort(picked, (x, y) -> {
            int byKey = Long.compare(all[FIELDS * x + 1], all[FIELDS * y + 1]);
            return byKey != 0 ? byKey : Integer.compare(x, y);
        });
        int[] transportRanks = new int[picked.length];
        int[] worldRanks = new int[picked.length];
        int me = -1;
        for (int i = 0; i < picked.length; i++) {
            int parentRank = picked[i];
            transportRanks[i] = parent.transportRank(parentRank);
            worldRanks[i] = parent.worldRank(parentRank);
            if (parentRank == rank) {
                me = i;
            }
        }
        return new Group(parent.transport(), me, transportRanks, worldRanks, (int) ctx);
    }
}
