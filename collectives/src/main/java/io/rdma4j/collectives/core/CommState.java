package io.rdma4j.collectives.core;

import io.rdma4j.collectives.CollectiveException;

/**
 * Per-communicator state the progress loop consults: the communicator's name on the fault board,
 * this rank's world rank, the collective sequence number, and the abort/broken flags, which another
 * thread may set at any time (abort) and which make every later call fail (broken, closed).
 */
public final class CommState {
    private final String board;
    private final int worldRank;
    private final CommState world;
    private long seq;
    private volatile CollectiveException aborted;
    private volatile CollectiveException broken;
    private volatile boolean closed;

    private CommState(String board, int worldRank, CommState world) {
        this.board = board;
        this.worldRank = worldRank;
        this.world = world;
    }

    /**
     * A world's state. {@code worldId} tells the worlds built on one store apart (the n-th
     * world of its size of every rank): a fault posted by an earlier world, aborted
     * and replaced on the same store, is not this one's.
     */
    public static CommState world(String worldId, int worldRank) {
        return new CommState("w" + worldId, worldRank, null);
    }

    /**
     * The state of {@code group}, a split of {@code world}. Disjoint groups may share a context id
     * (nested splits of different parents each take the lowest id free on their ranks), but two
     * groups with one id share no rank, so the id and the group's lowest world rank name it.
     */
    public static CommState split(CommState world, Group group, int worldRank) {
        int lowest = Integer.MAX_VALUE;
        for (int r = 0; r < group.size(); r++) {
            lowest = Math.min(lowest, group.worldRank(r));
        }
        return new CommState(world.board + "/c" + group.ctx() + "." + lowest, worldRank, world);
    }

    /** The communicator's name on the fault board, unique among the communicators of the store's worlds. */
    public String board() {
        return board;
    }

    public int worldRank() {
        return worldRank;
    }

    /** The world communicator's state (itself for the world). */
    public CommState world() {
        return world == null ? this : world;
    }

    /** Takes the next collective sequence number (issue order; identical on every rank). */
    public long nextSeq() {
        return seq++;
    }

    public void abort(CollectiveException cause) {
        if (aborted == null) {
            aborted = cause;
        }
    }

    /** The abort cause of this communicator or of the world it belongs to, else null. */
    public CollectiveException abortCause() {
        CollectiveException a = aborted;
        if (a == null && world != null) {
            a = world.aborted;
        }
        return a;
    }

    public void markBroken(CollectiveException cause) {
        if (broken == null) {
            broken = cause;
        }
    }

    public CollectiveException brokenCause() {
        return broken;
    }

    public void markClosed() {
        closed = true;
    }

    /**
     * Throws why a new call cannot run on this communicator (rank {@code rank} of {@code size}):
     * closed, aborted (here or in its world) or broken by an earlier failure.
     */
    public void checkUsable(int rank, int size) {
        if (closed) {
            throw new IllegalStateException("communicator (rank " + rank + " of " + size + ") is closed");
        }
        CollectiveException a = abortCause();
        if (a != null) {
            throw a;
        }
        CollectiveException b = broken;
        if (b != null) {
            throw new CollectiveException(b.failedRank(), "communicator is broken by an earlier failure: "
                    + b.getMessage(), b);
        }
    }
}
