package io.rdma4j.transport.testing;

import java.time.Duration;

/**
 * The wall-clock limits of the multi-process tests, stretched on a machine known to be slow.
 *
 * <p>A limit catches a hang; it does not measure speed. Under emulation (the Soft-RoCE guest of
 * {@code scripts/softroce-test} runs every JVM on qemu TCG with C1 only) starting three rank
 * JVMs alone takes tens of seconds, so that script sets the system property
 * {@value #PROPERTY} to a factor every limit is multiplied by. Unset, limits stay as written.
 */
public final class TimeLimits {
    /** The system property holding the factor (a number >= 1). */
    public static final String PROPERTY = "rdma4j.test.limitScale";

    private TimeLimits() {
    }

    /** {@code limit} times the factor of {@value #PROPERTY} (1 when unset). */
    public static Duration scaled(Duration limit) {
        return scaled(limit, System.getProperty(PROPERTY));
    }

    static Duration scaled(Duration limit, String factor) {
        if (factor == null || factor.isBlank()) {
            return limit;
        }
        double f;
        try {
            f = Double.parseDouble(factor.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(PROPERTY + "=" + factor + " is not a number", e);
        }
        if (!(f >= 1 && f <= 100)) {
            throw new IllegalArgumentException(PROPERTY + "=" + factor + " is outside 1..100: it stretches limits, never shortens them");
        }
        return Duration.ofNanos(Math.round(limit.toNanos() * f));
    }
}
