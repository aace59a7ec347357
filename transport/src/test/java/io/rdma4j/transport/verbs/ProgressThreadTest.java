package io.rdma4j.transport.verbs;

import io.rdma4j.transport.IdleStrategy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/** The progress thread never swallows what a pass throws: it stops and hands the error over, once. */
@Timeout(30)
class ProgressThreadTest {

    @Test
    void aPassThatThrowsStopsTheThreadAndHandsTheErrorOver() throws Exception {
        checkHandedOver(new IllegalStateException("a bug in a pass"));
    }

    @Test
    void anErrorIsHandedOverToo() throws Exception {
        checkHandedOver(new StackOverflowError("deep"));
    }

    private static void checkHandedOver(Throwable thrown) throws Exception {
        AtomicInteger passes = new AtomicInteger();
        AtomicInteger told = new AtomicInteger();
        CompletableFuture<Throwable> handedOver = new CompletableFuture<>();
        ProgressThread t = new ProgressThread("test-progress", () -> {
            if (passes.incrementAndGet() == 3) {
                sneakyThrow(thrown);
            }
            return 0;
        }, e -> {
            told.incrementAndGet();
            handedOver.complete(e);
        }, IdleStrategy.Kind.BUSY_SPIN.newInstance(1), -1);
        assertNull(t.failure());
        t.start();
        assertSame(thrown, handedOver.get(10, TimeUnit.SECONDS));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (t.isAlive() && System.nanoTime() - deadline < 0) {
            Thread.sleep(5);
        }
        assertFalse(t.isAlive(), "the thread stopped");
        assertEquals(3, passes.get(), "no pass after the failing one");
        assertEquals(1, told.get());
        assertSame(thrown, t.failure());
    }

    @SuppressWarnings("unchecked")
    private static <T extends Throwable> void sneakyThrow(Throwable t) throws T {
        throw (T) t;
    }
}
