package io.rdma4j.tools;

import io.rdma4j.verbs.DeviceDiscovery;
import io.rdma4j.verbs.DiscoveryStatus;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The report {@code rdma4j verbs-info} prints when there are no devices or no library. */
class VerbsInfoTest {

    @Test
    void verbsInfoPrintsTheExplanationAndExitsZero() {
        DeviceDiscovery none = new DeviceDiscovery(DiscoveryStatus.NO_DEVICES, List.of(), "load a driver " + "x ".repeat(80));
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        int rc = VerbsInfo.report(none, new PrintStream(buf, true, StandardCharsets.UTF_8), false);
        String out = buf.toString(StandardCharsets.UTF_8);
        assertEquals(0, rc);
        assertTrue(out.startsWith("rdma4j verbs-info: NO_DEVICES\nload a driver"), out);
        assertTrue(out.lines().allMatch(l -> l.length() <= 100), "wrapped to 100 columns:\n" + out);
        assertEquals(3, VerbsInfo.report(none, new PrintStream(new ByteArrayOutputStream()), true));
    }

    /** The real command in a fresh JVM with the library name overridden, as a user would see it. */
    @Test
    void verbsInfoCommandReportsAMissingLibrary() throws Exception {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED",
                "-Drdma4j.libibverbs=librdma4j-test-absent.so.1",
                "-cp", System.getProperty("java.class.path"),
                VerbsInfo.class.getName()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "verbs-info did not finish");
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.startsWith("rdma4j verbs-info: LIBRARY_MISSING"), out);
        assertTrue(out.contains("librdma4j-test-absent.so.1"), out);
        assertTrue(out.contains("libibverbs1"), out);
        assertFalse(out.contains("WARNING"), "no restricted-method warning:\n" + out);
    }
}
