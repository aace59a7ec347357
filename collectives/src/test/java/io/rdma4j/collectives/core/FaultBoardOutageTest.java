package io.rdma4j.collectives.core;

import io.rdma4j.transport.bootstrap.FileStore;
import io.rdma4j.transport.bootstrap.Store;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The board after a store call failed: off for its retry interval, then in use again, its registers re-read. */
class FaultBoardOutageTest {
    private static final Duration RETRY = Duration.ofSeconds(1);
    /** The board's clock, moved by the test. */
    private final java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong();

    /** A store whose next {@code failures} add calls fail, the first of them after the add reached the store. */
    private static final class FlakyStore implements Store {
        private final Store inner;
        final AtomicInteger failures = new AtomicInteger();

        FlakyStore(Store inner) {
            this.inner = inner;
        }

        @Override
        public void set(String key, byte[] value) {
            inner.set(key, value);
        }

        @Override
        public byte[] get(String key, Duration timeout) {
            return inner.get(key, timeout);
        }

        @Override
        public long add(String key, long delta) {
            long v = inner.add(key, delta); // applied, then its answer is lost
            if (failures.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                throw new IllegalStateException("the store did not answer in time");
            }
            return v;
        }

        @Override
        public boolean delete(String key) {
            return inner.delete(key);
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    @Test
    void oneFailedStoreCallTurnsTheBoardOffOnlyForTheRetryInterval(@TempDir Path dir) throws Exception {
        FlakyStore store = new FlakyStore(new FileStore(dir));
        FaultBoard reporter = new FaultBoard(store, RETRY, now::get);
        FaultBoard reader = new FaultBoard(new FileStore(dir), RETRY, now::get);
        Descriptor d = new Descriptor().set(CollectiveKind.ALL_REDUCE,
                io.rdma4j.collectives.DataType.F32, io.rdma4j.collectives.ReduceOp.SUM, 16, -1, 0, 7);

        reporter.reportStall("c", 0, d, 1);
        assertEquals(1, reader.readStall("c", 0).waitingFor());

        store.failures.set(1); // the next register write reaches the store, its answer is lost
        reporter.reportStall("c", 0, d, 2);
        assertFalse(reporter.available(), "off right after the failure");
        reporter.reportStall("c", 0, d, 3); // skipped while off
        FaultBoard.Fault f = new FaultBoard.Fault(FaultBoard.FaultKind.RANK_FAILED, 0, 2, "peer 2 died");
        reporter.post("c", f); // skipped while off
        assertNull(reader.poll("c"));

        now.addAndGet(RETRY.toNanos() - 1);
        assertFalse(reporter.available(), "off for the whole interval");
        now.incrementAndGet();
        assertTrue(reporter.available(), "in use again after the retry interval");
        reporter.reportStall("c", 0, d, 3);
        assertEquals(3, reader.readStall("c", 0).waitingFor(),
                "the register holds what was written last, not the lost write's value added twice");
        reporter.post("c", f);
        FaultBoard.Fault read = reader.poll("c");
        assertNotNull(read, "a fault posted after the outage reaches the other ranks");
        assertEquals(2, read.culprit());
    }

    @Test
    void failuresInARowTurnItOffForLongerUntilACallGoesThrough(@TempDir Path dir) {
        FlakyStore store = new FlakyStore(new FileStore(dir));
        FaultBoard board = new FaultBoard(store, RETRY, now::get);
        long second = RETRY.toNanos();
        for (long off : new long[] {1, 2, 4}) {
            store.failures.set(1);
            assertNull(board.poll("c"));
            now.addAndGet(off * second - 1);
            assertFalse(board.available(), "off for " + off + " s after failure " + off);
            now.incrementAndGet();
            assertTrue(board.available());
        }
        assertNull(board.poll("c")); // goes through
        assertTrue(board.available());
        store.failures.set(1);
        assertNull(board.poll("c"));
        assertFalse(board.available());
        now.addAndGet(second);
        assertTrue(board.available(), "after a call went through, the next failure's interval is the first again");
    }
}
