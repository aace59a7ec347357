package io.rdma4j.collectives;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Point-to-point calls number themselves per peer and direction, so a send, a receive and a
 * collective may carry the same number; a stall of one must not be read as a mismatch with
 * another that a peer stalled in.
 */
class PointToPointStallTest {

    /**
     * Rank 1 receives from rank 2 (which is late) before it receives from rank 0: rank 0's
     * send #0 of 10 floats and rank 1's receive #0 of 20 floats both stall, and both are right.
     */
    @Test
    void stalledSendsAndReceivesOfTheSameNumberToDifferentPeersAreNoMismatch() throws Exception {
        LocalWorld.tcp(3, Duration.ofSeconds(30), (rank, c) -> {
            float[] ten = new float[10];
            float[] twenty = new float[20];
            switch (rank) {
                case 0 -> {
                    java.util.Arrays.fill(ten, 1f);
                    c.send(MemorySegment.ofArray(ten), 10, DataType.F32, 1);
                }
                case 1 -> {
                    c.recv(MemorySegment.ofArray(twenty), 20, DataType.F32, 2);
                    c.recv(MemorySegment.ofArray(ten), 10, DataType.F32, 0);
                    assertEquals(2f, twenty[19]);
                    assertEquals(1f, ten[9]);
                }
                default -> {
                    Thread.sleep(2000); // both others stall meanwhile and report it
                    java.util.Arrays.fill(twenty, 2f);
                    c.send(MemorySegment.ofArray(twenty), 20, DataType.F32, 1);
                }
            }
            c.barrier();
        });
    }
}
