package io.rdma4j.collectives;

import io.rdma4j.collectives.core.Group;

/**
 * The context ids of a world's communicators, carried in every message tag so that the world
 * and its splits never match each other's messages: 0 is the world, 1 the two-hop cross-host
 * group, splits take ids from {@link #FIRST_SPLIT} on. A split agrees on its ids through its
 * allgather ({@link Split}): each rank proposes its next free id, every rank takes the largest
 * proposal as the base and reserves one id per color.
 */
final class ContextIds {
    static final long FIRST_SPLIT = 2;

    private long next = FIRST_SPLIT;

    /** This rank's lowest id not yet used by any communicator it belongs to. */
    synchronized long proposal() {
        return next;
    }

    /** Marks every id below {@code end} as used. */
    synchronized void reserveBelow(long end) {
        if (end > Group.MAX_CTX + 1L) {
            throw new CollectiveException(-1, "too many communicators: context ids exhausted (" + Group.MAX_CTX + ")");
        }
        next = Math.max(next, end);
    }
}
