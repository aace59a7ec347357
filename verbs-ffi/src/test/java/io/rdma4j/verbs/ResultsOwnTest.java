package io.rdma4j.verbs;

import io.rdma4j.nativesupport.ResourceClosedException;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A native object a verb created is freed when its Java owner cannot take it (no device needed). */
class ResultsOwnTest {
    private final MemorySegment handle = MemorySegment.ofAddress(0x1000);
    private final List<MemorySegment> destroyed = new ArrayList<>();

    private int destroy(MemorySegment h) {
        destroyed.add(h);
        return 0;
    }

    @Test
    void anOwnerThatCannotBeMadeLeavesNothingBehind() {
        ResourceClosedException closed = new ResourceClosedException("ProtectionDomain on rxe0");
        ResourceClosedException thrown = assertThrows(ResourceClosedException.class,
                () -> Results.own(handle, this::destroy, h -> {
                    throw closed;
                }));
        assertSame(closed, thrown, "the owner's failure is what the caller sees");
        assertEquals(List.of(handle), destroyed, "the handle was freed once");
    }

    @Test
    void anOwnedHandleIsNotFreed() {
        String owner = Results.own(handle, this::destroy, h -> "owner of " + h.address());
        assertEquals("owner of 4096", owner);
        assertTrue(destroyed.isEmpty(), "freed although owned: " + destroyed);
    }
}
