package io.rdma4j.transport.tcp;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpTransportLifecycleTest {

    private static long openDescriptors() throws IOException {
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    /** Transports, connections, stores and the store server give back every socket on close. */
    @Test
    void aClosedGroupLeavesNoSocketBehind() throws Exception {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/fd")));
        try (LocalGroup warmup = LocalGroup.start(2, LocalGroup.config(TransportConfig.Provider.TCP))) {
            warmup.connectAll(Duration.ofSeconds(20)); // loads classes, opens the JDK's own descriptors
        }
        long before = openDescriptors();
        for (int i = 0; i < 3; i++) {
            try (LocalGroup g = LocalGroup.start(4, LocalGroup.config(TransportConfig.Provider.TCP))) {
                g.connectAll(Duration.ofSeconds(20));
            }
        }
        long after = openDescriptors();
        assertTrue(after <= before + 2, "descriptors: " + before + " before, " + after + " after three 4-rank groups");
    }
}
