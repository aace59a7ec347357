package io.rdma4j.bench.coll;

import java.lang.foreign.MemorySegment;

/**
 * The two segments of one call, sliced once per size so the timed loop creates nothing:
 * {@code send} is what this rank contributes, {@code recv} what the check reads. In place they
 * are the same memory or one is a block of the other, as the collective's API defines.
 */
public record Slots(MemorySegment send, MemorySegment recv) {
}
