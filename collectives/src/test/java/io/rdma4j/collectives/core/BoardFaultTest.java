package io.rdma4j.collectives.core;

import io.rdma4j.collectives.CollectiveException;
import io.rdma4j.collectives.CollectiveMismatchException;
import io.rdma4j.collectives.CommunicatorAbortedException;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a rank that reads a fault from the board throws, and whom it names. */
class BoardFaultTest {

    @Test
    void aMismatchNamesTheOtherSideOnBothSides() {
        FaultBoard.Fault f = new FaultBoard.Fault(FaultBoard.FaultKind.MISMATCH, 1, 0, "rank 1 called count=9");
        CollectiveException atCulprit = Engine.BoardFault.of(0, f);
        assertInstanceOf(CollectiveMismatchException.class, atCulprit);
        assertEquals(1, atCulprit.failedRank(), "the rank the reporter disagreed with learns the reporter");
        assertTrue(atCulprit.getMessage().contains("reported by rank 1: rank 1 called count=9"), atCulprit.getMessage());
        assertEquals(0, Engine.BoardFault.of(2, f).failedRank(), "a third rank learns the reporter's culprit");
    }

    @Test
    void otherFaultsNameTheirCulpritEverywhere() {
        FaultBoard.Fault aborted = new FaultBoard.Fault(FaultBoard.FaultKind.ABORTED, 3, 3, "rank 3 aborted");
        CollectiveException e = Engine.BoardFault.of(3, aborted);
        assertInstanceOf(CommunicatorAbortedException.class, e);
        assertEquals(3, e.failedRank());
        FaultBoard.Fault dead = new FaultBoard.Fault(FaultBoard.FaultKind.RANK_FAILED, 1, 2, "peer 2 died");
        assertEquals(2, Engine.BoardFault.of(0, dead).failedRank());
    }
}
