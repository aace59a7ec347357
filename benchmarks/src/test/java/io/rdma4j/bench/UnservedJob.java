package io.rdma4j.bench;

import java.io.IOException;
import java.net.ServerSocket;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The environment of rank 1 of a 2-rank job whose store nobody serves, for the tools' set-up errors. */
final class UnservedJob {
    private UnservedJob() {
    }

    /** RANK 1 of 2, a store at a closed port of this host, a 300 ms timeout; {@code overrides} replace or add variables. */
    static Map<String, String> env(String... overrides) throws IOException {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        Map<String, String> env = new HashMap<>(Map.of("RANK", "1", "WORLD_SIZE", "2", "MASTER_ADDR", "127.0.0.1",
                "MASTER_PORT", Integer.toString(closedPort), "RDMA4J_TIMEOUT_MS", "300", "RDMA4J_JOB_TOKEN", "t"));
        for (int i = 0; i + 1 < overrides.length; i += 2) {
            env.put(overrides[i], overrides[i + 1]);
        }
        return env;
    }

    /** What a tool said names {@code why}, in lines of its own, without a stack trace. */
    static void assertSaidWithoutStackTrace(String said, String... why) {
        for (String w : why) {
            assertTrue(said.contains(w), said);
        }
        assertFalse(said.contains("\tat "), "no stack trace: " + said);
    }
}
