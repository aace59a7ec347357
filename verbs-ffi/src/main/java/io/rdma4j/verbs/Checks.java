package io.rdma4j.verbs;

/** Argument checks whose messages name the parameter, its value and the allowed range. */
final class Checks {
    private Checks() {
    }

    static int inRange(String name, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "], got " + value);
        }
        return value;
    }

    static long inRange(String name, long value, long min, long max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "], got " + value);
        }
        return value;
    }

    static int positive(String name, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
        return value;
    }

    static long positive(String name, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
        return value;
    }

    static int nonNegative(String name, int value) {
        if (value < 0) {
            throw new IllegalArgumentException(name + " must not be negative, got " + value);
        }
        return value;
    }

    /** A 32-bit unsigned quantity (SGE length, rkey, immediate data) passed in a Java long. */
    static long uint32(String name, long value) {
        return inRange(name, value, 0, 0xffff_ffffL);
    }
}
