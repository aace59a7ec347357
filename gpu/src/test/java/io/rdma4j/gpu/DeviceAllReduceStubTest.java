package io.rdma4j.gpu;

import io.rdma4j.cuda.testing.StubCuda;
import io.rdma4j.transport.testing.RankProcesses;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Allreduce of device buffers across 2 ranks in separate JVMs over shared memory and TCP, with
 * cuda-ffi's stub libcuda as the GPUs (the ranks load it through RDMA4J_LIBCUDA; this JVM only
 * compiles it, so it runs in the surefire execution jvm-stub-cuda). The ranks check the sums
 * themselves ({@link DeviceAllReduceRank}); this checks they passed and the path they reported:
 * staged, because neither transport reaches GPU memory and this machine has no RDMA device.
 */
@EnabledIfSystemProperty(named = "rdma4j.test.jvm", matches = "stub-cuda",
        disabledReason = "needs a JVM of its own: runs in the surefire execution jvm-stub-cuda")
class DeviceAllReduceStubTest {
    private static StubCuda stub;

    @BeforeAll
    static void compileStub() {
        stub = StubCuda.install();
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void twoRanksAllReduceDeviceBuffersThroughTheStagedPath(String provider) throws Exception {
        Map<String, String> env = Map.of("RDMA4J_LIBCUDA", stub.library.toString(), "STUB_CUDA_DEVICE_COUNT", "2",
                "RDMA4J_TRANSPORT", provider, "RDMA4J_TIMEOUT_MS", "60000", "RDMA4J_IDLE_STRATEGY", "backoff");
        try (RankProcesses ranks = RankProcesses.launch(2, DeviceAllReduceRank.class, env)) {
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
}
