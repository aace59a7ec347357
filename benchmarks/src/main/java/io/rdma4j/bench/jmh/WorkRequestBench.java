package io.rdma4j.bench.jmh;

import io.rdma4j.verbs.CompletionQueue;
import io.rdma4j.verbs.DeviceContext;
import io.rdma4j.verbs.RdmaDevices;
import io.rdma4j.verbs.SendFlags;
import io.rdma4j.verbs.SendOpcode;
import io.rdma4j.verbs.SendWorkRequests;
import io.rdma4j.verbs.WorkCompletions;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * The verbs data path's Java side. {@code buildChain}: filling a doorbell batch of RDMA-write
 * work requests (what the verbs provider does before one post_send), off-device, so it runs
 * anywhere. {@code pollEmptyCq}: one ibv_poll_cq on an idle completion queue, the busy-polling
 * thread's steady state; it needs an RDMA device (the Soft-RoCE guest: scripts/softroce-vm --
 * benchmarks/scripts/jmh WorkRequestBench) and fails its setup with the reason elsewhere.
 * Both must allocate nothing ({@code -prof gc}).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class WorkRequestBench {

    @State(Scope.Thread)
    public static class Chain {
        @Param({"1", "32"})
        public int batch;

        SendWorkRequests wrs;
        long address = 0x7f00_0000_0000L;

        @Setup(Level.Trial)
        public void allocate() {
            wrs = new SendWorkRequests(batch, 1);
        }

        @TearDown(Level.Trial)
        public void free() {
            wrs.close();
        }
    }

    @State(Scope.Thread)
    public static class Cq {
        DeviceContext device;
        CompletionQueue cq;
        WorkCompletions wcs;

        @Setup(Level.Trial)
        public void open() {
            device = RdmaDevices.open(System.getenv("RDMA4J_IB_HCA"));
            cq = device.createCompletionQueue(256);
            wcs = new WorkCompletions(32);
        }

        @TearDown(Level.Trial)
        public void close() {
            wcs.close();
            cq.close();
            device.close();
        }
    }

    /** A batch of RDMA writes, every 16th signalled (selective signalling), one SGE each. */
    @Benchmark
    public int buildChain(Chain c) {
        SendWorkRequests wrs = c.wrs;
        wrs.reset();
        for (int i = 0; i < c.batch; i++) {
            int w = wrs.add(i, SendOpcode.RDMA_WRITE, (i & 15) == 15 || i == c.batch - 1 ? SendFlags.SIGNALED : 0);
            wrs.addSge(w, c.address + 4096L * i, 4096, 0x1234);
            wrs.setRdma(w, c.address + 4096L * i, 0x5678);
        }
        return wrs.count();
    }

    @Benchmark
    public int pollEmptyCq(Cq q) {
        return q.cq.poll(q.wcs);
    }
}
