package io.rdma4j.transport.tcp;

/**
 * Request slots of one connection in the order they were queued, linked through
 * {@link RequestTable#next} (a slot is in at most one queue): the sends waiting for a CTS, the
 * receives no message claimed yet. Matching takes the oldest of a tag, as both sides pair the k-th
 * send of a tag with the k-th receive of it. Allocation-free.
 */
final class SlotFifo {
    private final RequestTable requests;
    private int head = -1;
    private int tail = -1;

    SlotFifo(RequestTable requests) {
        this.requests = requests;
    }

    void append(int slot) {
        requests.next[slot] = -1;
        if (tail < 0) {
            head = slot;
        } else {
            requests.next[tail] = slot;
        }
        tail = slot;
    }

    /** Unlinks and returns the oldest slot of {@code tag}, or -1. */
    int takeOldest(int tag) {
        for (int prev = -1, s = head; s >= 0; prev = s, s = requests.next[s]) {
            if (requests.tag[s] == tag) {
                unlink(prev, s);
                return s;
            }
        }
        return -1;
    }

    /** Unlinks {@code slot}; false if it is not queued here. */
    boolean remove(int slot) {
        for (int prev = -1, s = head; s >= 0; prev = s, s = requests.next[s]) {
            if (s == slot) {
                unlink(prev, s);
                return true;
            }
        }
        return false;
    }

    /** Unlinks {@code s}, which follows {@code prev} (-1: {@code s} is the head). */
    private void unlink(int prev, int s) {
        int after = requests.next[s];
        if (prev < 0) {
            head = after;
        } else {
            requests.next[prev] = after;
        }
        if (tail == s) {
            tail = prev;
        }
        requests.next[s] = -1;
    }

    /** Whether a queued send of {@code tag} waits for its CTS to go out (a rendezvous send, not an eager one). */
    boolean holdsRendezvous(int tag) {
        for (int s = head; s >= 0; s = requests.next[s]) {
            if (requests.tag[s] == tag && requests.eager[s] == 0) {
                return true;
            }
        }
        return false;
    }

    void clear() {
        head = -1;
        tail = -1;
    }
}
