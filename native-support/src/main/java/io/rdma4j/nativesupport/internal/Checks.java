package io.rdma4j.nativesupport.internal;

import java.lang.foreign.MemorySegment;

/** Argument checks whose messages name the parameter, its value and what is allowed. */
public final class Checks {
    private Checks() {
    }

    public static int inRange(String name, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "], got " + value);
        }
        return value;
    }

    public static long inRange(String name, long value, long min, long max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "], got " + value);
        }
        return value;
    }

    public static int positive(String name, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
        return value;
    }

    public static long positive(String name, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
        return value;
    }

    public static int nonNegative(String name, int value) {
        if (value < 0) {
            throw new IllegalArgumentException(name + " must not be negative, got " + value);
        }
        return value;
    }

    /** A 32-bit unsigned quantity (SGE length, rkey, immediate data) passed in a Java long. */
    public static long uint32(String name, long value) {
        return inRange(name, value, 0, 0xffff_ffffL);
    }

    /** Checks that [offset, offset + length) lies inside [0, size) of {@code what}, without overflow. */
    public static void range(long offset, long length, long size, Object what) {
        if (offset < 0 || length < 0 || offset > size || length > size - offset) {
            throw new IndexOutOfBoundsException("range [offset " + offset + ", length " + length + "] is outside "
                    + what + " of " + size + " bytes");
        }
    }

    /** Native code reads memory by address: heap segments have none (and the GC moves them). */
    public static void nativeMemory(MemorySegment segment, String role, String use) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException(role + " is a heap segment; " + use);
        }
    }

    /** {@link #nativeMemory}, and not read-only. */
    public static void writableNativeMemory(MemorySegment segment, String role, String use) {
        nativeMemory(segment, role, use);
        if (segment.isReadOnly()) {
            throw new IllegalArgumentException(role + " is a read-only segment");
        }
    }
}
