package io.rdma4j.transport.shm;

/**
 * A FIFO of request slots linked through a shared {@code next} array (a slot is in at most one
 * queue at a time), so queueing allocates nothing.
 */
final class SlotQueue {
    private final int[] next;
    private int head = -1;
    private int tail = -1;

    SlotQueue(int[] next) {
        this.next = next;
    }

    boolean isEmpty() {
        return head < 0;
    }

    int first() {
        return head;
    }

    /** The slot after {@code slot}, -1 at the end. */
    int next(int slot) {
        return next[slot];
    }

    void add(int slot) {
        next[slot] = -1;
        if (tail < 0) {
            head = slot;
        } else {
            next[tail] = slot;
        }
        tail = slot;
    }

    /** Removes {@code slot}, whose predecessor in this queue is {@code previous} (-1 if first). */
    void remove(int slot, int previous) {
        int after = next[slot];
        if (previous < 0) {
            head = after;
        } else {
            next[previous] = after;
        }
        if (tail == slot) {
            tail = previous;
        }
        next[slot] = -1;
    }

    /** Removes {@code slot} if it is in this queue (a walk from the head); whether it was. */
    boolean removeIfPresent(int slot) {
        for (int s = head, previous = -1; s >= 0; previous = s, s = next[s]) {
            if (s == slot) {
                remove(s, previous);
                return true;
            }
        }
        return false;
    }

    /** Whether {@code slot} is in this queue (a walk from the head). */
    boolean contains(int slot) {
        for (int s = head; s >= 0; s = next[s]) {
            if (s == slot) {
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
