package io.rdma4j.transport.bootstrap;

import java.time.Duration;

/**
 * A caller's wait as a number: a negative one is no wait, and one too long to count in the unit
 * ({@code ChronoUnit.FOREVER.getDuration()}, the usual "wait for good") is the longest there is,
 * instead of the ArithmeticException that {@link Duration#toNanos()} throws for it.
 */
final class Waits {
    private Waits() {
    }

    static long nanos(Duration wait) {
        try {
            return Math.max(0, wait.toNanos());
        } catch (ArithmeticException tooLong) {
            return wait.isNegative() ? 0 : Long.MAX_VALUE;
        }
    }

    static long millis(Duration wait) {
        try {
            return Math.max(0, wait.toMillis());
        } catch (ArithmeticException tooLong) {
            return wait.isNegative() ? 0 : Long.MAX_VALUE;
        }
    }
}
