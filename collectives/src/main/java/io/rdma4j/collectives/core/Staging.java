package io.rdma4j.collectives.core;

import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.Transport;

/**
 * Registered memory that algorithms stage chunks in, allocated once per transport and grown on
 * demand (collectives on one transport run one at a time, so one region serves them all):
 * a data region, a descriptor (control) region and a scratch region for heap-array arguments.
 */
public final class Staging implements AutoCloseable {
    private static final int DATA = 0, CONTROL = 1, SCRATCH = 2;

    private final Transport transport;
    /** The data region, the control region and the two scratch regions, by the indices above. */
    private final RegisteredBuffer[] regions = new RegisteredBuffer[4];

    public Staging(Transport transport) {
        this.transport = transport;
    }

    public Transport transport() {
        return transport;
    }

    /** At least {@code bytes} of staging memory; contents are undefined. */
    public RegisteredBuffer data(long bytes) {
        return ensure(DATA, bytes);
    }

    /** Room for {@code slots} control slots ({@link Descriptor#CONTROL_SLOT} bytes each). */
    public RegisteredBuffer control(int slots) {
        return ensure(CONTROL, (long) slots * Descriptor.CONTROL_SLOT);
    }

    /** Registered scratch for a copied-in (heap) argument; two independent ones for out-of-place calls. */
    public RegisteredBuffer scratch(int which, long bytes) {
        return ensure(SCRATCH + which, bytes);
    }

    /**
     * Region {@code i}, grown to hold {@code bytes}: the old one is closed and forgotten before the
     * new one is allocated, so that a failed allocation (shm or locked memory exhausted) leaves
     * none, not a closed one that the next smaller request would be handed.
     */
    private RegisteredBuffer ensure(int i, long bytes) {
        RegisteredBuffer current = regions[i];
        if (current != null && current.byteSize() >= bytes) {
            return current;
        }
        long size = Math.max(bytes, current == null ? 4096 : current.byteSize() * 2);
        size = (size + 4095) & ~4095L;
        if (current != null) {
            regions[i] = null;
            current.close();
        }
        regions[i] = transport.allocate(size);
        return regions[i];
    }

    @Override
    public void close() {
        for (int i = 0; i < regions.length; i++) {
            if (regions[i] != null) {
                regions[i].close();
                regions[i] = null;
            }
        }
    }
}
