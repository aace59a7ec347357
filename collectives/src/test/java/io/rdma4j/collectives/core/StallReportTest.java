package io.rdma4j.collectives.core;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.transport.IdleStrategy;
import io.rdma4j.transport.bootstrap.FileStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * What a stalled rank's register on the fault board says: the others follow it to name the rank
 * at the end of a chain of waits, so it must name the rank this one waits for now.
 */
class StallReportTest {
    private static final int ME = 0;
    private static final long GIVE_UP_NANOS = Duration.ofSeconds(10).toNanos();

    @Test
    void aRankThatMovedOnAndStallsAgainReportsTheRankItWaitsForNow(@TempDir Path dir) {
        FaultBoard board = new FaultBoard(new FileStore(dir));
        CommState cs = CommState.world("1", ME);
        CollectiveOptions options = CollectiveOptions.defaults().withTimeout(Duration.ofMinutes(1))
                .withStallCheck(Duration.ofMillis(5));
        IdleStrategy park = new IdleStrategy.Backoff(0, 0, 20_000, 20_000);
        ScriptedStall op = new ScriptedStall(board, cs.board());
        new Engine(options, board, park, park, false).drive(op, cs, new int[] {0, 1, 2, 3});

        assertEquals(1, op.reportedInFirstStall, "the first stall's register names the rank waited for");
        assertEquals(3, op.reportedInSecondStall,
                "after progress, the second stall's register names the rank it waits for now, not the first one's");
    }

    /**
     * Waits for rank 1 until the register says so, moves once, then waits for rank 3 until the
     * register says so (or gives up), reading the register as the other ranks would.
     */
    private static final class ScriptedStall extends CollectiveOp {
        private final Descriptor identity = new Descriptor().set(CollectiveKind.ALL_REDUCE, DataType.F32, ReduceOp.SUM,
                16, -1, 0, 7);
        private final FaultBoard board;
        private final String comm;
        private int waitingFor = 1;
        private long phaseStart;
        private long nextRead;
        private boolean done;
        int reportedInFirstStall = Integer.MIN_VALUE;
        int reportedInSecondStall = Integer.MIN_VALUE;

        ScriptedStall(FaultBoard board, String comm) {
            this.board = board;
            this.comm = comm;
        }

        @Override
        public Descriptor identity() {
            return identity;
        }

        @Override
        public void start() {
            phaseStart = System.nanoTime();
        }

        @Override
        public boolean step() {
            long now = System.nanoTime();
            if (now - nextRead < 0) {
                return false;
            }
            nextRead = now + 2_000_000;
            FaultBoard.Stall s = board.readStall(comm, ME);
            int reported = s == null || s.seq() != identity.seq ? Integer.MIN_VALUE : s.waitingFor();
            boolean givenUp = now - phaseStart > GIVE_UP_NANOS;
            if (reported != waitingFor && !givenUp) {
                return false;
            }
            if (waitingFor == 1) {
                reportedInFirstStall = reported;
                waitingFor = 3;
                phaseStart = now;
                return true; // progress: a chunk arrived from rank 1
            }
            reportedInSecondStall = reported;
            done = true;
            return true;
        }

        @Override
        public boolean isDone() {
            return done;
        }

        @Override
        public int waitingFor() {
            return waitingFor;
        }
    }
}
