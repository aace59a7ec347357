package io.rdma4j.collectives;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The synchronous collective path allocates nothing per call once warmed up (reused ops,
 * descriptors, staging and registrations): measured with the JVM's per-thread allocation
 * counter over many calls, for each allreduce algorithm, on two ranks in this JVM.
 */
class SteadyStateAllocationTest {

    @Test
    void allReduceAllocatesNothingPerCall() throws Exception {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        for (TransportConfig.Provider provider : new TransportConfig.Provider[] {TransportConfig.Provider.SHM,
                TransportConfig.Provider.TCP}) {
            try (LocalGroup g = LocalGroup.start(2, LocalGroup.config(provider))) {
                long[] perCall = new long[2];
                g.run(Duration.ofMinutes(2), (rank, t, store) -> {
                    try (Communicator c = Communicator.builder().transport(t).store(store)
                            .options(CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(30))).build();
                         Arena arena = Arena.ofShared()) {
                        MemorySegment small = arena.allocate(256);
                        MemorySegment large = arena.allocate(256 << 10);
                        MemorySegment heapOut = MemorySegment.ofArray(new float[64]);
                        // SHM: the shared-window path (shm; over TCP the policy's fallback), out of place into heap
                        for (Algorithm a : new Algorithm[] {Algorithm.RHD, Algorithm.RING, Algorithm.TREE, Algorithm.SHARED_WINDOW}) {
                            MemorySegment buf = a == Algorithm.RHD || a == Algorithm.SHARED_WINDOW ? small : large;
                            MemorySegment out = a == Algorithm.SHARED_WINDOW ? heapOut : buf;
                            long count = buf.byteSize() / 4;
                            // steady state: the SIMD kernels box their vectors until C2 has compiled
                            // them, which small vectors (few loop trips per call) reach after a few
                            // thousand calls
                            int warmUp = buf == small ? 20_000 : 1_000;
                            for (int i = 0; i < warmUp; i++) {
                                c.allReduce(buf, out, count, DataType.F32, ReduceOp.SUM, a);
                            }
                            // best of three rounds: a stall on a loaded machine takes the (allocating)
                            // fault-board slow path, which is not what this measures
                            long bytes = Long.MAX_VALUE;
                            for (int round = 0; round < 3; round++) {
                                long before = mx.getCurrentThreadAllocatedBytes();
                                int calls = 200;
                                for (int i = 0; i < calls; i++) {
                                    c.allReduce(buf, out, count, DataType.F32, ReduceOp.SUM, a);
                                }
                                bytes = Math.min(bytes, (mx.getCurrentThreadAllocatedBytes() - before) / calls);
                            }
                            perCall[rank] = Math.max(perCall[rank], bytes);
                            System.out.println(provider + " rank " + rank + " " + a + ": " + bytes + " B/call");
                        }
                        c.barrier();
                    }
                });
                for (long b : perCall) {
                    assertTrue(b < 8, provider + ": " + b + " bytes allocated per allreduce");
                }
            }
        }
    }
}
