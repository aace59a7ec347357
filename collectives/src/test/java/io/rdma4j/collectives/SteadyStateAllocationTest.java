package io.rdma4j.collectives;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import io.rdma4j.transport.testing.SteadyStateWorkload;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The collective paths allocate nothing per call once warmed up (reused ops, descriptors,
 * staging, registrations, queued requests and {@link Work} handles): measured with the JVM's
 * per-thread allocation counters over many calls, on two ranks in this JVM. Synchronous calls are
 * counted on the caller's thread; asynchronous ones on the caller's and the progress thread's.
 */
class SteadyStateAllocationTest {
    /**
     * Rounds of 200 calls; the best one counts (every rank makes all of them: the calls are
     * collectives). A per-call allocation shows in every round. What shows in some only is the
     * machine's load: a stall takes the (allocating) fault-board slow path, and a compiler thread
     * that a busy host starves leaves code to C1 longer, whose objects are real allocations where
     * C2's escape analysis removes them (the bucketer step measured 9 B per step in all of 3
     * rounds while two builds ran beside this test, 0 B alone).
     */
    private static final int ROUNDS = 10;

    private static final com.sun.management.ThreadMXBean MX =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final int CALLS_PER_ROUND = 200;
    /** Counting on the calling thread only. */
    private static final LongSupplier NO_THREAD = () -> -1;
    private static final Duration AWAIT = Duration.ofSeconds(30);

    /** One rank's part: fills in its bytes per call of each measured kind. */
    private interface RankBody {
        void run(int rank, Communicator c, Arena arena, long[] perCall) throws Exception;
    }

    /**
     * Runs {@code body} on two ranks over {@code provider} (TCP skipped where the JDK's selector
     * itself allocates), each with a communicator and an arena, then a barrier; asserts that no
     * rank allocated 8 bytes or more per call of any kind in {@code names}.
     */
    private static void onTwoRanks(TransportConfig.Provider provider, Duration budget, String[] names, RankBody body)
            throws Exception {
        assumeTrue(provider != TransportConfig.Provider.TCP || SteadyStateWorkload.selectorAllocates() == null,
                SteadyStateWorkload.selectorAllocates());
        try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(provider))) {
            long[][] perCall = new long[2][names.length];
            g.run(budget, (rank, t, store) -> {
                try (Communicator c = Communicator.builder().transport(t).store(store)
                        .options(CollectiveOptions.defaults().withTimeout(AWAIT)).build();
                     Arena arena = Arena.ofShared()) {
                    body.run(rank, c, arena, perCall[rank]);
                    c.barrier();
                }
            });
            for (long[] rank : perCall) {
                for (int kind = 0; kind < names.length; kind++) {
                    assertTrue(rank[kind] < 8, provider + ": " + rank[kind] + " bytes allocated per " + names[kind]);
                }
            }
        }
    }

    /**
     * Bytes {@code call} allocates per run after {@code warmUp} runs: the best of {@link #ROUNDS}
     * rounds, counted on this thread and, unless it is -1, on the thread {@code otherThread}
     * names after the warm-up (a communicator starts its progress thread on the first
     * asynchronous call).
     */
    private static long bytesPerCall(Runnable call, int warmUp, LongSupplier otherThreadAfterWarmUp) {
        for (int i = 0; i < warmUp; i++) {
            call.run();
        }
        long otherThread = otherThreadAfterWarmUp.getAsLong();
        long bytes = Long.MAX_VALUE;
        for (int round = 0; round < ROUNDS; round++) {
            long before = allocatedBytes(otherThread);
            for (int i = 0; i < CALLS_PER_ROUND; i++) {
                call.run();
            }
            bytes = Math.min(bytes, (allocatedBytes(otherThread) - before) / CALLS_PER_ROUND);
        }
        return bytes;
    }

    private static long allocatedBytes(long otherThread) {
        return MX.getCurrentThreadAllocatedBytes() + (otherThread < 0 ? 0 : MX.getThreadAllocatedBytes(otherThread));
    }

    @ParameterizedTest
    @EnumSource(value = TransportConfig.Provider.class, names = {"SHM", "TCP"})
    void allReduceAllocatesNothingPerCall(TransportConfig.Provider provider) throws Exception {
        // SHARED_WINDOW: the shared-window path (shm; over TCP the policy's fallback), out of place into heap;
        // RHD twice: small (the eager path) and large (halving and doubling on shm, doubling on
        // the data lanes over TCP)
        Algorithm[] algorithms = {Algorithm.RHD, Algorithm.RHD, Algorithm.RING, Algorithm.TREE, Algorithm.SHARED_WINDOW};
        boolean[] onSmall = {true, false, false, false, true};
        String[] names = new String[algorithms.length];
        for (int k = 0; k < algorithms.length; k++) {
            names[k] = "allreduce (" + algorithms[k] + (onSmall[k] ? ", small" : ", large") + ")";
        }
        onTwoRanks(provider, Duration.ofMinutes(2), names, (rank, c, arena, perCall) -> {
            MemorySegment small = arena.allocate(256);
            MemorySegment large = arena.allocate(256 << 10);
            MemorySegment heapOut = MemorySegment.ofArray(new float[64]);
            for (int k = 0; k < algorithms.length; k++) {
                Algorithm a = algorithms[k];
                MemorySegment buf = onSmall[k] ? small : large;
                MemorySegment out = a == Algorithm.SHARED_WINDOW ? heapOut : buf;
                long count = buf.byteSize() / 4;
                // steady state: the SIMD kernels box their vectors until C2 has compiled
                // them, which small vectors (few loop trips per call) reach after a few
                // thousand calls
                int warmUp = buf == small ? 20_000 : 1_000;
                perCall[k] = bytesPerCall(() -> c.allReduce(buf, out, count, DataType.F32, ReduceOp.SUM, a), warmUp, NO_THREAD);
                System.out.println(provider + " rank " + rank + " " + names[k] + ": " + perCall[k] + " B/call");
            }
        });
    }

    /** The other collectives' synchronous calls, each measured as the allreduce above. */
    @ParameterizedTest
    @EnumSource(value = TransportConfig.Provider.class, names = {"SHM", "TCP"})
    void theOtherCollectivesAllocateNothingPerCall(TransportConfig.Provider provider) throws Exception {
        String[] names = {"allToAll", "allGather", "reduceScatter", "broadcast", "fp16 average allreduce",
            "fp16 average reduceScatter"};
        onTwoRanks(provider, Duration.ofMinutes(2), names, (rank, c, arena, perCall) -> {
            MemorySegment send = arena.allocate(4096);
            MemorySegment recv = arena.allocate(8192);
            Runnable[] calls = {
                    () -> c.allToAll(send, recv, 512, DataType.F32),
                    () -> c.allGather(send, recv, 1024, DataType.F32),
                    () -> c.reduceScatter(recv, send, 1024, DataType.F32, ReduceOp.SUM),
                    () -> c.broadcast(send, 1024, DataType.F32, 0),
                    () -> c.allReduce(send, recv, 2048, DataType.F16, ReduceOp.AVG),
                    () -> c.reduceScatter(recv, send, 2048, DataType.F16, ReduceOp.AVG)};
            for (int kind = 0; kind < calls.length; kind++) {
                perCall[kind] = bytesPerCall(calls[kind], 5_000, NO_THREAD);
                System.out.println(provider + " rank " + rank + " " + names[kind] + ": " + perCall[kind] + " B/call");
            }
        });
    }

    @ParameterizedTest
    @EnumSource(value = TransportConfig.Provider.class, names = {"SHM", "TCP"})
    void asynchronousCallsAndTheBucketerAllocateNothingPerCall(TransportConfig.Provider provider) throws Exception {
        String[] names = {"allReduceAsync + await", "4 queued allReduceAsync", "bucketer step",
                "100 barrierAsync, then their awaits", "bucket views step, marked with conditions"};
        onTwoRanks(provider, Duration.ofMinutes(3), names, (rank, c, arena, perCall) -> {
            MemorySegment small = arena.allocate(256);
            MemorySegment[] batch = new MemorySegment[4];
            for (int k = 0; k < batch.length; k++) {
                batch[k] = arena.allocate(4096);
            }
            Work[] works = new Work[batch.length];
            List<MemorySegment> grads = new ArrayList<>();
            for (int k = 0; k < 6; k++) {
                grads.add(arena.allocate(1024L << k)); // 1-32 KiB gradients, several per 16 KiB bucket
            }
            Runnable oneByOne = () -> c.allReduceAsync(small, DataType.F32, ReduceOp.SUM).await(AWAIT);
            // several queued at once: the progress thread and the waiter both run them
            Runnable batched = () -> {
                for (int k = 0; k < batch.length; k++) {
                    works[k] = c.allReduceAsync(batch[k], DataType.F32, ReduceOp.SUM);
                }
                for (Work w : works) {
                    w.await(AWAIT);
                }
            };
            // more handles out at once than the queue holds calls (the issuer runs the oldest when it is full)
            Work[] many = new Work[100];
            Runnable manyOutstanding = () -> {
                for (int k = 0; k < many.length; k++) {
                    many[k] = c.barrierAsync();
                }
                for (Work w : many) {
                    w.await(AWAIT);
                }
            };
            long[] viewBytes = grads.stream().mapToLong(MemorySegment::byteSize).toArray();
            // false in three polls of four: the call waits for its input, idling as it does
            AtomicLong polls = new AtomicLong();
            BooleanSupplier condition = () -> polls.incrementAndGet() % 4 == 0;
            try (GradientBucketer bucketer = new GradientBucketer(c, DataType.F32, grads, 16 << 10, ReduceOp.AVG);
                 GradientBucketer views = GradientBucketer.withBucketViews(c, DataType.F32, viewBytes, 16 << 10,
                         ReduceOp.AVG)) {
                Runnable step = () -> {
                    for (int k = 0; k < grads.size(); k++) {
                        bucketer.markReady(k);
                    }
                    bucketer.finish(AWAIT);
                };
                Runnable markedWhen = () -> {
                    for (int k = 0; k < viewBytes.length; k++) {
                        views.markReadyWhen(k, condition);
                    }
                    views.finish(AWAIT);
                };
                Runnable[] kinds = {oneByOne, batched, step, manyOutstanding, markedWhen};
                // 20,000: until C2 compiled the SIMD kernels (see above); the barriers reduce nothing
                int[] warmUps = {20_000, 20_000, 20_000, 200, 20_000};
                for (int kind = 0; kind < kinds.length; kind++) {
                    perCall[kind] = bytesPerCall(kinds[kind], warmUps[kind], c::progressThreadId);
                    System.out.println(provider + " rank " + rank + " async kind " + kind + ": " + perCall[kind] + " B/call");
                }
            }
        });
    }
}
