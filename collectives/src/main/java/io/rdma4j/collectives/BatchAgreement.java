package io.rdma4j.collectives;

import io.rdma4j.transport.RegisteredBuffer;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * For data-parallel trainers: before each step, the ranks tell each other how many examples
 * their next batch has (0: no batch left), so that all of them step, or all of them stop, or all
 * of them fail with the same message. A rank whose data ran out must not leave the others
 * waiting in the gradient allreduce, and batches of different sizes would weigh the ranks'
 * gradients unequally. One allgather of one number per rank and step.
 */
public final class BatchAgreement implements AutoCloseable {
    private final Communicator comm;
    private final RegisteredBuffer mine;
    private final RegisteredBuffer all;

    public BatchAgreement(Communicator comm) {
        this.comm = comm;
        this.mine = comm.allocate(Long.BYTES);
        this.all = comm.allocate((long) Long.BYTES * comm.size());
    }

    /**
     * Returns true when every rank has a batch of {@code examples} examples, false when no rank
     * has one; throws {@link UnevenDataException} on every rank otherwise.
     */
    public boolean allHave(long examples, long step) {
        mine.segment().set(ValueLayout.JAVA_LONG, 0, examples);
        comm.allGather(mine.segment(), all.segment(), 1, DataType.I64);
        MemorySegment counts = all.segment();
        boolean same = true;
        for (int r = 0; r < comm.size(); r++) {
            same &= counts.getAtIndex(ValueLayout.JAVA_LONG, r) == examples;
        }
        if (same) {
            return examples > 0;
        }
        throw new UnevenDataException(describe(counts, step));
    }

    private String describe(MemorySegment counts, long step) {
        StringBuilder without = new StringBuilder();
        StringBuilder sizes = new StringBuilder();
        for (int r = 0; r < comm.size(); r++) {
            long n = counts.getAtIndex(ValueLayout.JAVA_LONG, r);
            if (n == 0) {
                without.append(without.isEmpty() ? "" : ", ").append(r);
            }
            sizes.append(r == 0 ? "" : ", ").append("rank ").append(r).append(": ").append(n);
        }
        String what = without.isEmpty()
                ? "the ranks' batches differ in size"
                : "rank(s) " + without + " ran out of batches while others still have some";
        return "data-parallel step " + step + ": " + what + " (examples in the next batch: " + sizes
                + "); every rank must get the same number of batches of the same size (shard the data evenly)";
    }

    @Override
    public void close() {
        mine.close();
        all.close();
    }
}
