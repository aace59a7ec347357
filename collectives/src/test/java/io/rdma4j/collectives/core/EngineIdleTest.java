package io.rdma4j.collectives.core;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.transport.IdleStrategy;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * A caller that waits for its own call idles with the engine's strategy, a progress thread
 * ({@link Engine.Background}) with the background one: the first may keep a CPU of its own
 * spinning, the second shares its CPU with the computation it overlaps.
 */
class EngineIdleTest {

    @Test
    void aBackgroundThreadIdlesWithTheBackgroundStrategyAndACallerWithTheEngines() throws Exception {
        Counting caller = new Counting();
        Counting background = new Counting();
        Engine engine = new Engine(CollectiveOptions.defaults(), new FaultBoard(null), caller, background, false);
        CommState cs = CommState.world("1", 0);

        engine.drive(new IdleTimes(5), cs, new int[] {0, 1});
        assertEquals(5, caller.idles, "the calling thread's waits");
        assertEquals(0, background.idles);

        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = new Engine.Background(() -> {
            try {
                engine.drive(new IdleTimes(7), cs, new int[] {0, 1});
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "progress");
        t.start();
        t.join();
        assertNull(failure.get());
        assertEquals(7, background.idles, "the progress thread's waits");
        assertEquals(5, caller.idles, "none of them on the caller's strategy");
    }

    private static final class Counting implements IdleStrategy {
        int idles;

        @Override
        public void idle() {
            idles++;
        }

        @Override
        public void reset() {
        }
    }

    /** Finds nothing to do {@code n} times, then is done. */
    private static final class IdleTimes extends CollectiveOp {
        private final Descriptor identity = new Descriptor().set(CollectiveKind.ALL_REDUCE, DataType.F32, ReduceOp.SUM,
                1, -1, 0, 1);
        private int left;
        private boolean done;

        IdleTimes(int n) {
            this.left = n;
        }

        @Override
        public Descriptor identity() {
            return identity;
        }

        @Override
        public void start() {
        }

        @Override
        public boolean step() {
            done = left-- == 0;
            return false;
        }

        @Override
        public boolean isDone() {
            return done;
        }

        @Override
        public int waitingFor() {
            return 1;
        }
    }
}
