package io.rdma4j.gpu;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.cuda.Cuda;
import io.rdma4j.cuda.CudaContext;
import io.rdma4j.cuda.CudaException;
import io.rdma4j.cuda.testing.StubCuda;
import io.rdma4j.transport.testing.RankProcesses;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Allreduce of device buffers across 2 ranks in separate JVMs over shared memory and TCP, with
 * cuda-ffi's stub libcuda as the GPUs (the ranks load it through RDMA4J_LIBCUDA; this JVM only
 * compiles it, so it runs in the surefire execution jvm-stub-cuda). The ranks check the sums
 * themselves ({@link DeviceAllReduceRank}); this checks they passed and the path they reported:
 * staged, because neither transport reaches GPU memory and this machine has no RDMA device.
 * The stub's streams are asynchronous and each queued copy is delayed, so the two-slot pipeline's
 * event waits are what keeps a slot from being reduced before its copy landed; with the stub
 * told to skip those waits the same ranks must find wrong sums.
 */
@EnabledIfSystemProperty(named = "rdma4j.test.jvm", matches = "stub-cuda",
        disabledReason = "needs a JVM of its own: runs in the surefire execution jvm-stub-cuda")
class DeviceAllReduceStubTest {
    private static StubCuda stub;

    @BeforeAll
    static void compileStub() {
        stub = StubCuda.install();
    }

    /**
     * Each queued copy waits this long in the stub: long against a host allreduce of one 4 KiB
     * chunk (microseconds once connected), and very long where a wrong result must show.
     */
    private static final int COPY_DELAY_MICROS = 2_000;
    private static final int COPY_DELAY_WITHOUT_WAITS_MICROS = 50_000;

    private static Map<String, String> env(String provider, boolean skipEventWaits) {
        int delay = skipEventWaits ? COPY_DELAY_WITHOUT_WAITS_MICROS : COPY_DELAY_MICROS;
        return Map.of("RDMA4J_LIBCUDA", stub.library.toString(), "STUB_CUDA_DEVICE_COUNT", "2",
                "STUB_CUDA_OP_DELAY_US", Integer.toString(delay), "STUB_CUDA_SKIP_EVENT_WAITS", skipEventWaits ? "1" : "0",
                "RDMA4J_TRANSPORT", provider, "RDMA4J_TIMEOUT_MS", "60000", "RDMA4J_IDLE_STRATEGY", "backoff");
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void twoRanksAllReduceDeviceBuffersThroughTheStagedPath(String provider) throws Exception {
        try (RankProcesses ranks = RankProcesses.launch(2, DeviceAllReduceRank.class, env(provider, false))) {
            ranks.awaitSuccess(Duration.ofSeconds(120));
            for (int r = 0; r < 2; r++) {
                String out = ranks.output(r);
                assertTrue(out.contains("DEVICE ALLREDUCE OK"), out);
                assertTrue(out.contains("PATH staged through host memory (the " + provider + " transport moves host memory only"), out);
                assertTrue(out.contains("GPUDirect RDMA detection: UNAVAILABLE: no RDMA device"), out);
            }
            System.out.println(provider + " rank 0:\n" + ranks.output(0));
        }
    }

    @Test
    void withoutItsEventWaitsThePipelineReducesSlotsBeforeTheirCopiesLanded() throws Exception {
        try (RankProcesses ranks = RankProcesses.launch(2, DeviceAllReduceRank.class, env("shm", true))) {
            for (int r = 0; r < 2; r++) {
                Process p = ranks.process(r);
                assertTrue(p.waitFor(120, TimeUnit.SECONDS), "rank " + r + " did not finish:\n" + ranks.output(r));
                String out = ranks.output(r);
                assertEquals(1, p.exitValue(), out);
                assertTrue(out.contains("FAIL f32 sum of 1000: element 0 is "), out); // the first call may be slow enough to pass
                assertFalse(out.contains("DEVICE ALLREDUCE OK"), out);
            }
        }
    }

    /**
     * A close whose first event fails to close still closes the other events, the stream and
     * the pinned buffer (they used to stay open, and with them the context's primary retain), in
     * this JVM with a world of one rank.
     */
    @Test
    void aFailedCloseOfOneEventStillClosesTheRest() {
        stub.configure(0, 1, 12040);
        int streams = stub.liveStreams();
        int events = stub.liveEvents();
        int hostAllocations = stub.liveHostAllocations();
        try (Communicator comm = Communicator.fromEnvironment(Map.of("RANK", "0", "WORLD_SIZE", "1",
                "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "0", "RDMA4J_TRANSPORT", "shm",
                "RDMA4J_JOB_TOKEN", "gpu-close-test"))) {
            CudaContext context = Cuda.device(0).retainPrimaryContext();
            DeviceAllReduce gpu = new DeviceAllReduce(comm, context);
            stub.inject("cuEventDestroy_v2", 999, 1);
            assertThrows(CudaException.class, gpu::close);
            assertEquals(streams, stub.liveStreams());
            assertEquals(events + 1, stub.liveEvents(), "only the event whose destroy failed");
            assertEquals(hostAllocations, stub.liveHostAllocations());
            context.close();
            assertEquals(0, stub.primaryContextRetains(0));
        }
    }
}
