package io.rdma4j.spark;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.transport.TransportConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Spark's barrier execution mode in local[4]: a barrier stage of 4 tasks bootstraps rdma4j
 * through {@link BarrierStore} and allreduces across its tasks over TCP.
 */
@Timeout(180)
class SparkBarrierAllReduceTest {
    private static final int TASKS = 4;
    private static final int COUNT = 10_000;

    /** Runs in each barrier task: allreduce (sum) of task-dependent values; returns "rank:checksum:ok". */
    static String allReduceInTask() {
        SparkBarrierGroup group = SparkBarrierGroup.current();
        TransportConfig tcp = TransportConfig.builder().provider(TransportConfig.Provider.TCP).tcpAddress("127.0.0.1").build();
        try (BarrierStore store = BarrierStore.create(group);
             Communicator comm = Communicator.builder().rank(group.rank()).size(group.size()).store(store)
                     .transportConfig(tcp).options(CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(60)))
                     .build()) {
            float[] v = new float[COUNT];
            for (int i = 0; i < COUNT; i++) {
                v[i] = (i % 100) * (comm.rank() + 1);
            }
            comm.allReduce(v, ReduceOp.SUM);
            int n = comm.size();
            int wrong = 0;
            for (int i = 0; i < COUNT; i++) {
                // sum over ranks of (i % 100) * (r + 1) = (i % 100) * n(n+1)/2, exact in f32
                if (v[i] != (i % 100) * (n * (n + 1) / 2f)) {
                    wrong++;
                }
            }
            return comm.rank() + "/" + n + " wrong=" + wrong + " provider=" + comm.provider();
        }
    }

    @Test
    void aBarrierStageOfFourTasksAllReducesThroughTheBarrierStore() {
        assertEquals(List.of("0/4 wrong=0 provider=tcp", "1/4 wrong=0 provider=tcp", "2/4 wrong=0 provider=tcp",
                "3/4 wrong=0 provider=tcp"), List.of(LocalBarrierStage.run(TASKS, SparkBarrierAllReduceTest::allReduceInTask)));
    }
}
