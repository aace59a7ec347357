package io.rdma4j.tools;

import io.rdma4j.cuda.Cuda;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** gpu-check on a machine without libcuda.so.1 (own JVM: the CUDA layer caches the outcome per process). */
@EnabledIfSystemProperty(named = "rdma4j.test.jvm", matches = "libcuda-missing",
        disabledReason = "needs a JVM of its own: runs in the surefire execution jvm-libcuda-missing")
class GpuCheckWithoutLibcudaTest {

    @Test
    void reportsNoGpuWithTheReason() {
        System.setProperty(Cuda.LIBRARY_PROPERTY, "/nonexistent-rdma4j-test/libcuda.so.1");
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        int status = GpuCheck.run(new String[0], new PrintStream(text, true));
        assertEquals(GpuCheck.NO_GPU, status, text.toString());
        assertTrue(text.toString().contains("LIBRARY_MISSING") && text.toString().contains("Result = SKIPPED"),
                text.toString());
    }
}
