package io.rdma4j.transport;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TransportConfigTest {

    @Test
    void defaultsAreValid() {
        TransportConfig c = TransportConfig.defaults();
        assertEquals(TransportConfig.Provider.AUTO, c.provider());
        assertEquals(Duration.ofSeconds(60), c.timeout());
        assertEquals(Path.of("/dev/shm"), c.shmDir());
        assertEquals(IdleStrategy.Kind.BACKOFF, c.idleStrategy());
        assertNull(c.ibHca());
        assertEquals(1, c.ibPort());
        assertEquals(TransportConfig.TCP_CONGESTION_AUTO, c.tcpCongestion());
    }

    @Test
    void everyEnvironmentVariableIsApplied() {
        Map<String, String> env = new HashMap<>();
        env.put("RDMA4J_TRANSPORT", "tcp");
        env.put("RDMA4J_IB_HCA", "rxe0");
        env.put("RDMA4J_IB_PORT", "2");
        env.put("RDMA4J_IB_GID_INDEX", "3");
        env.put("RDMA4J_IB_QPS_PER_CONNECTION", "4");
        env.put("RDMA4J_IB_TIMEOUT", "20");
        env.put("RDMA4J_IB_RETRY_CNT", "5");
        env.put("RDMA4J_IB_RNR_RETRY", "6");
        env.put("RDMA4J_IB_MTU", "1024");
        env.put("RDMA4J_IB_SL", "7");
        env.put("RDMA4J_IB_TC", "106");
        env.put("RDMA4J_SIGNAL_INTERVAL", "8");
        env.put("RDMA4J_BATCH_SIZE", "9");
        env.put("RDMA4J_IDLE_STRATEGY", "busy-spin");
        env.put("RDMA4J_HUGE_PAGES", "1");
        env.put("RDMA4J_PROGRESS_THREAD", "true");
        env.put("RDMA4J_PROGRESS_CPU", "3");
        env.put("RDMA4J_TIMEOUT_MS", "1500");
        env.put("RDMA4J_MAX_REQUESTS", "128");
        env.put("RDMA4J_REGISTRATION_CAP_BYTES", "1048576");
        env.put("RDMA4J_TCP_IFNAME", "eth9");
        env.put("RDMA4J_TCP_ADDRESS", "10.0.0.1");
        env.put("RDMA4J_TCP_CONGESTION", "cubic");
        env.put("RDMA4J_SHM_DIR", "/tmp/x");
        TransportConfig c = TransportConfig.builder().fromEnvironment(env).build();
        assertEquals(TransportConfig.Provider.TCP, c.provider());
        assertEquals("rxe0", c.ibHca());
        assertEquals(2, c.ibPort());
        assertEquals(3, c.ibGidIndex());
        assertEquals(4, c.ibQpsPerConnection());
        assertEquals(20, c.ibTimeout());
        assertEquals(5, c.ibRetryCount());
        assertEquals(6, c.ibRnrRetry());
        assertEquals(1024, c.ibMtu());
        assertEquals(7, c.ibServiceLevel());
        assertEquals(106, c.ibTrafficClass());
        assertEquals(8, c.signalInterval());
        assertEquals(9, c.batchSize());
        assertEquals(IdleStrategy.Kind.BUSY_SPIN, c.idleStrategy());
        assertTrue(c.hugePages());
        assertTrue(c.progressThread());
        assertEquals(3, c.progressCpu());
        assertEquals(Duration.ofMillis(1500), c.timeout());
        assertEquals(128, c.maxOutstandingRequests());
        assertEquals(1 << 20, c.registrationCapBytes());
        assertEquals("eth9", c.tcpInterface());
        assertEquals("10.0.0.1", c.tcpAddress());
        assertEquals("cubic", c.tcpCongestion());
        assertEquals(Path.of("/tmp/x"), c.shmDir());
        String s = c.toString();
        for (String part : new String[] {"provider=tcp", "ibHca=rxe0", "ibMtu=1024", "idleStrategy=busy-spin", "timeoutMs=1500", "tcpCongestion=cubic", "shmDir=/tmp/x"}) {
            assertTrue(s.contains(part), s + " lacks " + part);
        }
        assertEquals(s, c.toBuilder().build().toString(), "toBuilder keeps every setting");
    }

    @Test
    void badValuesNameTheirVariable() {
        assertMessage(Map.of("RDMA4J_IB_PORT", "abc"), "RDMA4J_IB_PORT");
        assertMessage(Map.of("RDMA4J_TRANSPORT", "carrier-pigeon"), "RDMA4J_TRANSPORT");
        assertMessage(Map.of("RDMA4J_IDLE_STRATEGY", "nap"), "RDMA4J_IDLE_STRATEGY");
        assertMessage(Map.of("RDMA4J_HUGE_PAGES", "maybe"), "RDMA4J_HUGE_PAGES");
        assertMessage(Map.of("RDMA4J_IB_MTU", "1500"), "RDMA4J_IB_MTU");
        assertMessage(Map.of("RDMA4J_IB_RETRY_CNT", "8"), "RDMA4J_IB_RETRY_CNT");
        assertMessage(Map.of("RDMA4J_TIMEOUT_MS", "0"), "RDMA4J_TIMEOUT_MS");
        // meant as "no timeout", but its nanoseconds would not fit a long
        assertMessage(Map.of("RDMA4J_TIMEOUT_MS", "100000000000000"), "RDMA4J_TIMEOUT_MS");
        assertMessage(Map.of("RDMA4J_IB_SL", "16"), "RDMA4J_IB_SL");
        assertMessage(Map.of("RDMA4J_PROGRESS_CPU", "-2"), "RDMA4J_PROGRESS_CPU");
        assertMessage(Map.of("RDMA4J_REGISTRATION_CAP_BYTES", "4095"), "RDMA4J_REGISTRATION_CAP_BYTES");
        assertMessage(Map.of("RDMA4J_REGISTRATION_CAP_BYTES", "1G"), "RDMA4J_REGISTRATION_CAP_BYTES");
        // not a name setsockopt could take: a NUL-terminated name of at most 15 characters
        assertMessage(Map.of("RDMA4J_TCP_CONGESTION", "a-congestion-control"), "RDMA4J_TCP_CONGESTION");
        assertMessage(Map.of("RDMA4J_TCP_CONGESTION", "re no"), "RDMA4J_TCP_CONGESTION");
    }

    @Test
    void theLongestTimeoutWorksInNanoseconds() {
        TransportConfig c = TransportConfig.builder().fromEnvironment(
                Map.of("RDMA4J_TIMEOUT_MS", Long.toString(TransportConfig.MAX_TIMEOUT.toMillis()))).build();
        assertEquals(TransportConfig.MAX_TIMEOUT.toNanos(), c.timeoutNanos());
    }

    private static void assertMessage(Map<String, String> env, String expected) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TransportConfig.builder().fromEnvironment(env).build());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }

    @Test
    void blankVariablesKeepTheDefault() {
        TransportConfig c = TransportConfig.builder().fromEnvironment(Map.of("RDMA4J_IB_PORT", " ", "RDMA4J_IB_HCA", "")).build();
        assertEquals(1, c.ibPort());
        assertNull(c.ibHca());
    }

    @Test
    void builderValidationRejectsOutOfRangeValues() {
        assertThrows(IllegalArgumentException.class, () -> TransportConfig.builder().ibQpsPerConnection(0).build());
        assertThrows(IllegalArgumentException.class, () -> TransportConfig.builder().maxOutstandingRequests(0).build());
        assertThrows(IllegalArgumentException.class, () -> TransportConfig.builder().timeout(Duration.ofSeconds(-1)).build());
        assertThrows(IllegalArgumentException.class, () -> TransportConfig.builder().tcpCongestion(null).build());
        assertEquals("bbr", TransportConfig.builder().tcpCongestion("bbr").build().tcpCongestion());
        assertFalse(TransportConfig.builder().provider(TransportConfig.Provider.SHM).build().hugePages());
        assertEquals(TransportConfig.NO_REGISTRATION_CAP, TransportConfig.defaults().registrationCapBytes());
    }
}
