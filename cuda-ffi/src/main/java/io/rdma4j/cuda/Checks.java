package io.rdma4j.cuda;

import java.lang.foreign.MemorySegment;

/** Argument checks shared by the buffer classes; messages name the argument and the object. */
final class Checks {
    private Checks() {
    }

    static long positive(String name, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be > 0, got " + value);
        }
        return value;
    }

    /** Checks that [offset, offset + length) lies inside [0, size) of {@code what}, without overflow. */
    static void range(long offset, long length, long size, Object what) {
        if (offset < 0 || length < 0 || offset > size || length > size - offset) {
            throw new IndexOutOfBoundsException("range [offset " + offset + ", length " + length + "] is outside "
                    + what + " of " + size + " bytes");
        }
    }

    /** The driver reads host memory by address: heap segments have none. */
    static void nativeHost(MemorySegment segment, String role) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException(role + " is a heap segment; CUDA copies need native memory "
                    + "(a PinnedHostBuffer's segment, or Arena.allocate)");
        }
    }

    static void writable(MemorySegment segment, String role) {
        nativeHost(segment, role);
        if (segment.isReadOnly()) {
            throw new IllegalArgumentException(role + " is a read-only segment");
        }
    }
}
