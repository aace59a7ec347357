package io.rdma4j.bench.coll;

import io.rdma4j.bench.check.TestPattern;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Locale;

/**
 * What differs between the collectives that {@link io.rdma4j.bench.CollectiveBenchmark}
 * measures: the counts and bandwidth accounting of nccl-tests, the buffers of a call, the call
 * itself and the result each rank must hold. Counts follow nccl-tests (and the Communicator):
 * the "count" of a reduce-scatter is what each rank receives, of an allgather what each sends.
 */
public interface BenchCollective {

    /** Name as on the command line: allreduce, reducescatter, allgather, broadcast. */
    String name();

    /** Whether the collective reduces (so {@code -o} and the op column apply). */
    boolean reduces();

    /** Whether the collective has a root (so {@code -r} and the root column apply). */
    boolean rooted();

    /** Whether the API has a distinct-buffer form (broadcast works on one buffer only). */
    default boolean hasOutOfPlace() {
        return true;
    }

    /** nccl-tests' busbw / algbw ratio for {@code ranks} ranks (see PERFORMANCE.md of nccl-tests). */
    double busFactor(int ranks);

    /** The count passed to the call for a requested size of {@code bytes}. */
    long count(long bytes, int elementSize, int ranks);

    /** Elements of each rank's (out-of-place) send buffer. */
    long sendElements(long count, int ranks);

    /** Elements of each rank's (out-of-place) receive buffer. */
    long recvElements(long count, int ranks);

    /** The bytes that algbw divides by the time (nccl-tests: the full data size of the operation). */
    long algBytes(long count, int elementSize, int ranks);

    /** The size column: the larger of the send and receive buffers. */
    default long printedBytes(long count, int elementSize, int ranks) {
        return Math.max(sendElements(count, ranks), recvElements(count, ranks)) * elementSize;
    }

    /**
     * The segments of one call, carved from {@code sendBuf} and {@code recvBuf} (sized for the
     * largest count); in place, from whichever buffer is big enough for the in-place layout.
     */
    Slots slots(MemorySegment sendBuf, MemorySegment recvBuf, long count, int elementSize, int rank, int ranks,
                boolean inPlace);

    /** Runs the collective once. Allocates nothing for a given {@code slots}. */
    void run(Communicator comm, Slots slots, long count, DataType type, ReduceOp op, int root);

    /** Whether {@code rank} writes its input before the call (broadcast: only the root). */
    default boolean contributes(int rank, int root) {
        return true;
    }

    /** What element {@code index} of {@code rank}'s receive segment must hold afterwards. */
    double expected(TestPattern pattern, int rank, int ranks, int root, long count, long index);

    /** Elements of the receive segment that {@link #expected} describes. */
    default long checkedElements(long count, int ranks) {
        return recvElements(count, ranks);
    }

    List<BenchCollective> ALL = List.of(new AllReduceBench(), new ReduceScatterBench(), new AllGatherBench(),
            new BroadcastBench());

    /** Looks one up by name; accepts nccl-tests' spellings (all_reduce, reduce_scatter, all_gather). */
    static BenchCollective named(String name) {
        String n = name.trim().toLowerCase(Locale.ROOT).replace("_", "").replace("-", "");
        for (BenchCollective c : ALL) {
            if (c.name().equals(n)) {
                return c;
            }
        }
        throw new IllegalArgumentException("unknown collective '" + name
                + "' (expected allreduce, reducescatter, allgather or broadcast)");
    }
}
