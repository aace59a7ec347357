package io.rdma4j.collectives;

import io.rdma4j.collectives.core.Staging;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.Test;

import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Staging that could not grow (the transport refused the larger allocation) hands out no region
 * it closed: the next smaller request used to get the closed one back, which communicators sharing
 * the engine (a world and its splits) went on using.
 */
class StagingGrowthTest {

    @Test
    void aFailedGrowthLeavesNoClosedRegionBehind() {
        try (LocalGroup g = LocalGroup.start(1, LocalGroup.config(TransportConfig.Provider.TCP))) {
            FaultyTransport t = new FaultyTransport(g.transport(0)) {
                @Override
                void beforeAllocate(long bytes) {
                    if (bytes > 8192) {
                        throw new IllegalStateException("no memory for " + bytes + " bytes");
                    }
                }
            };
            try (Staging s = new Staging(t)) {
                for (int which = 0; which < 2; which++) {
                    s.scratch(which, 4096).segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 1);
                    int w = which;
                    assertThrows(IllegalStateException.class, () -> s.scratch(w, 1 << 20));
                    RegisteredBuffer again = s.scratch(which, 100);
                    assertTrue(again.segment().scope().isAlive(), "scratch " + which + " handed out closed");
                    again.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 2);
                }
                s.data(4096);
                assertThrows(IllegalStateException.class, () -> s.data(1 << 20));
                assertTrue(s.data(64).segment().scope().isAlive());
            }
        }
    }
}
