package io.rdma4j.bench.launch;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A tool's status as its JVM ends with it: what it let through is a failure, not "wrong results". */
class ExitStatusTest {

    @Test
    void aToolsOwnStatusIsKeptAndWhatItLetThroughIsAFailure() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream err = new PrintStream(out, true, StandardCharsets.UTF_8);
        assertEquals(ExitStatus.WRONG_RESULTS, ExitStatus.of(() -> ExitStatus.WRONG_RESULTS, err));
        assertEquals(ExitStatus.FAILED, ExitStatus.of(() -> {
            throw new OutOfMemoryError("no memory (test)");
        }, err));
        assertEquals(ExitStatus.FAILED, ExitStatus.of(() -> {
            throw new IllegalStateException("a bug (test)");
        }, err));
        String said = out.toString(StandardCharsets.UTF_8);
        assertTrue(said.contains("failed: java.lang.OutOfMemoryError: no memory (test)"), said);
        assertTrue(said.contains("\tat "), "printed whole: " + said);
        assertEquals("failed", ExitStatus.describe(ExitStatus.FAILED));
    }
}
