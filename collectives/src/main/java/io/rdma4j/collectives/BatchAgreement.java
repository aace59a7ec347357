package io.rdma4j.collectives;

import io.rdma4j.transport.RegisteredBuffer;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * For data-parallel trainers: before each step, the ranks tell each other how many examples
 * their next batch has (0: no batch left), so that all of them step, or all of them stop, or all
 * of them fail with the same message. A rank whose data ran out must not leave the others
 * waiting in the gradient allreduce, and batches of different sizes would weigh the ranks'
 * gradients unequally. One allgather of two numbers per rank and step.
 */
public final class BatchAgreement implements AutoCloseable {
    private final Communicator comm;
    private final RegisteredBuffer mine;
    private final RegisteredBuffer all;

    public BatchAgreement(Communicator comm) {
        this.comm = comm;
        this.mine = comm.allocate(2L * Long.BYTES);
        try {
            this.all = comm.allocate(2L * Long.BYTES * comm.size());
        } catch (RuntimeException e) {
            mine.close();
            throw e;
        }
    }

    /**
     * Returns true when every rank has a batch of {@code examples} examples, false when no rank
     * has one; throws {@link UnevenDataException} on every rank otherwise.
     */
    public boolean allHave(long examples, long step) {
        return allHave(examples, 1, step);
    }

    /**
     * The same for a batch the trainer steps through in {@code passes} gradient allreduces (one
     * per segment of a time series under truncated backpropagation through time): the ranks must
     * also agree on that number, or they would call different numbers of allreduces.
     */
    public boolean allHave(long examples, long passes, long step) {
        mine.segment().setAtIndex(ValueLayout.JAVA_LONG, 0, examples);
        mine.segment().setAtIndex(ValueLayout.JAVA_LONG, 1, passes);
        comm.allGather(mine.segment(), all.segment(), 2, DataType.I64);
        MemorySegment counts = all.segment();
        boolean sameExamples = true;
        boolean samePasses = true;
        for (int r = 0; r < comm.size(); r++) {
            sameExamples &= counts.getAtIndex(ValueLayout.JAVA_LONG, 2L * r) == examples;
            samePasses &= counts.getAtIndex(ValueLayout.JAVA_LONG, 2L * r + 1) == passes;
        }
        if (sameExamples && (samePasses || examples == 0)) {
            return examples > 0;
        }
        throw new UnevenDataException(sameExamples ? describePasses(counts, step) : describe(counts, step));
    }

    private String describe(MemorySegment counts, long step) {
        StringBuilder without = new StringBuilder();
        for (int r = 0; r < comm.size(); r++) {
            if (counts.getAtIndex(ValueLayout.JAVA_LONG, 2L * r) == 0) {
                without.append(without.isEmpty() ? "" : ", ").append(r);
            }
        }
        String what = without.isEmpty()
                ? "the ranks' batches differ in size"
                : "rank(s) " + without + " ran out of batches while others still have some";
        return "data-parallel step " + step + ": " + what + " (examples in the next batch: " + perRank(counts, 0)
                + "); every rank must get the same number of batches of the same size (shard the data evenly)";
    }

    private String describePasses(MemorySegment counts, long step) {
        return "data-parallel step " + step + ": the ranks' batches take different numbers of gradient passes"
                + " (truncated-BPTT segments of their time series: " + perRank(counts, 1)
                + "); every rank's batch must cut into as many segments (pad the sequences to the same length)";
    }

    /** "rank 0: n, rank 1: m, ..." of the {@code field}-th number each rank sent. */
    private String perRank(MemorySegment counts, int field) {
        StringBuilder s = new StringBuilder();
        for (int r = 0; r < comm.size(); r++) {
            s.append(r == 0 ? "" : ", ").append("rank ").append(r).append(": ")
                    .append(counts.getAtIndex(ValueLayout.JAVA_LONG, 2L * r + field));
        }
        return s.toString();
    }

    @Override
    public void close() {
        mine.close();
        all.close();
    }
}
