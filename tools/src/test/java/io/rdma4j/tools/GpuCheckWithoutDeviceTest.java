package io.rdma4j.tools;

import io.rdma4j.cuda.testing.StubCuda;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** gpu-check where the driver is installed but finds no GPU (stub cuInit: CUDA_ERROR_NO_DEVICE; own JVM). */
@EnabledIfSystemProperty(named = "rdma4j.test.jvm", matches = "stub-no-device",
        disabledReason = "needs a JVM of its own: runs in the surefire execution jvm-stub-no-device")
class GpuCheckWithoutDeviceTest {

    @Test
    void skipsWithTheReason() {
        StubCuda.install().configure(100, 0, 12040);
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        assertEquals(GpuCheck.NO_GPU, GpuCheck.run(new String[0], new PrintStream(text, true)));
        assertTrue(text.toString().contains("NO_DEVICE") && text.toString().contains("no CUDA-capable device"),
                text.toString());
    }
}
