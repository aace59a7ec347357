package io.rdma4j.transport.testing;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TimeLimitsTest {
    @Test
    void anUnsetFactorLeavesTheLimitAndAFactorMultipliesIt() {
        Duration limit = Duration.ofSeconds(180);
        assertEquals(limit, TimeLimits.scaled(limit, null));
        assertEquals(limit, TimeLimits.scaled(limit, " "));
        assertEquals(Duration.ofSeconds(720), TimeLimits.scaled(limit, "4"));
        assertEquals(Duration.ofMillis(270_000), TimeLimits.scaled(limit, "1.5"));
    }

    @Test
    void aFactorThatIsNoNumberOrWouldShortenTheLimitIsRefusedNamingTheProperty() {
        for (String bad : new String[] {"four", "0.5", "0", "-2", "NaN", "1000"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> TimeLimits.scaled(Duration.ofSeconds(1), bad), bad);
            assertTrue(e.getMessage().contains(TimeLimits.PROPERTY + "=" + bad), e.getMessage());
        }
    }
}
