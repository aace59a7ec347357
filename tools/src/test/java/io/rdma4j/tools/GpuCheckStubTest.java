package io.rdma4j.tools;

import io.rdma4j.cuda.testing.StubCuda;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * GpuCheck's own logic (verification, reporting, exit status) against the stub driver (own JVM).
 * The bandwidth it prints here is memcpy speed and means nothing; only the plumbing is checked.
 */
@EnabledIfSystemProperty(named = "rdma4j.test.jvm", matches = "stub-driver",
        disabledReason = "needs a JVM of its own: runs in the surefire execution jvm-stub-driver")
class GpuCheckStubTest {
    private static StubCuda stub;

    @BeforeAll
    static void install() {
        stub = StubCuda.install();
        stub.configure(0, 1, 12040);
    }

    private static String run(int expectedStatus, String... args) {
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        int status = GpuCheck.run(args, new PrintStream(text, true));
        assertEquals(expectedStatus, status, text.toString());
        return text.toString();
    }

    @Test
    void passesAndPrintsBandwidthTableWhenEveryByteArrives() {
        int live = stub.liveDeviceAllocations();
        String out = run(GpuCheck.PASSED, "--size", "1M", "--iterations", "2");
        assertTrue(out.contains("[PASS] host -> device -> device -> host copy of 1048576 bytes"), out);
        assertTrue(out.contains("[PASS] pointer attributes of device memory"), out);
        assertTrue(out.contains("dma-buf export: dma-buf fd"), out);
        assertTrue(out.contains("Host to Device Bandwidth") && out.contains("Transfer Size (Bytes)")
                && out.contains("   1048576\t"), out);
        assertTrue(out.contains("Result = PASS"), out);
        assertTrue(!out.contains("[FAIL]"), out);
        assertEquals(live, stub.liveDeviceAllocations(), "GpuCheck frees what it allocates");
        assertEquals(0, stub.primaryContextRetains(0));
    }

    @Test
    void failsAndSaysWhereWhenACopyIsCorrupted() {
        stub.corruptNextDeviceToHostCopy();
        String out = run(GpuCheck.FAILED, "--size", "64K", "--iterations", "1");
        assertTrue(out.contains("[FAIL] host -> device -> device -> host copy of 65536 bytes: mismatch at byte 32768"),
                out);
        assertTrue(out.contains("Result = FAIL (1 check(s) failed"), out);
    }

    @Test
    void badArgumentsGiveUsage() {
        String out = run(GpuCheck.USAGE, "--size", "12");
        assertTrue(out.contains("usage: GpuCheck"), out);
        run(GpuCheck.USAGE, "--device", "5");
        run(GpuCheck.USAGE, "--bogus", "1");
        assertEquals(3L << 20, GpuCheck.parseBytes("3m"));
        assertEquals(64L << 10, GpuCheck.parseBytes("64K"));
    }
}
