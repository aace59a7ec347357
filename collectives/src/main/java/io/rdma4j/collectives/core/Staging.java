package io.rdma4j.collectives.core;

import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.Transport;

/**
 * Registered memory that algorithms stage chunks in, allocated once per transport and grown on
 * demand (collectives on one transport run one at a time, so one region serves them all):
 * a data region, a descriptor (control) region and a scratch region for heap-array arguments.
 */
public final class Staging implements AutoCloseable {
    private final Transport transport;
    private RegisteredBuffer data;
    private RegisteredBuffer control;
    private RegisteredBuffer scratch;
    private RegisteredBuffer scratch2;

    public Staging(Transport transport) {
        this.transport = transport;
    }

    public Transport transport() {
        return transport;
    }

    /** At least {@code bytes} of staging memory; contents are undefined. */
    public RegisteredBuffer data(long bytes) {
        data = ensure(data, bytes);
        return data;
    }

    /** Room for {@code slots} control slots ({@link Descriptor#CONTROL_SLOT} bytes each). */
    public RegisteredBuffer control(int slots) {
        control = ensure(control, (long) slots * Descriptor.CONTROL_SLOT);
        return control;
    }

    /** Registered scratch for a copied-in (heap) argument; two independent ones for out-of-place calls. */
    public RegisteredBuffer scratch(int which, long bytes) {
        if (which == 0) {
            scratch = ensure(scratch, bytes);
            return scratch;
        }
        scratch2 = ensure(scratch2, bytes);
        return scratch2;
    }

    private RegisteredBuffer ensure(RegisteredBuffer current, long bytes) {
        if (current != null && current.byteSize() >= bytes) {
            return current;
        }
        long size = Math.max(bytes, current == null ? 4096 : current.byteSize() * 2);
        size = (size + 4095) & ~4095L;
        if (current != null) {
            current.close();
        }
        return transport.allocate(size);
    }

    @Override
    public void close() {
        for (RegisteredBuffer b : new RegisteredBuffer[] {data, control, scratch, scratch2}) {
            if (b != null) {
                b.close();
            }
        }
        data = control = scratch = scratch2 = null;
    }
}
