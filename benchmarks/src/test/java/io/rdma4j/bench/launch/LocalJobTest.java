package io.rdma4j.bench.launch;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LocalJobTest {

    @Test
    void ranksGetTheEnvContractAndMeetInTheLaunchersStore() {
        ByteArrayOutputStream outBuf = new ByteArrayOutputStream();
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(outBuf, true, StandardCharsets.UTF_8);
        PrintStream err = new PrintStream(buf, true, StandardCharsets.UTF_8);
        int status = new LocalJob("test", ScriptedRank.class.getName(), List.of("ok"), 3, Map.of(), out, err).run();
        String log = buf.toString(StandardCharsets.UTF_8);
        assertEquals(ExitStatus.OK, status, log);
        // rank 0's stdout is passed on as it is, the others' lines go to stderr with a prefix
        assertEquals("rank=0 size=3 local=0/3 master=127.0.0.1 met all\n", outBuf.toString(StandardCharsets.UTF_8));
        assertTrue(log.contains("[rank 1] rank=1 size=3 local=1/3 master=127.0.0.1 met all"), log);
        assertTrue(log.contains("[rank 2] rank=2 size=3 local=2/3 master=127.0.0.1 met all"), log);
    }

    @Test
    void aDeadRankStopsTheOthersAndIsNamed() {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream err = new PrintStream(buf, true, StandardCharsets.UTF_8);
        long t0 = System.nanoTime();
        int status = new LocalJob("test", ScriptedRank.class.getName(), List.of("fail:1"), 3, Map.of(), err, err).run();
        double seconds = (System.nanoTime() - t0) / 1e9;
        String log = buf.toString(StandardCharsets.UTF_8);
        assertEquals(ExitStatus.FAILED, status, log);
        assertTrue(log.contains("test: rank 1 (pid "), log);
        assertTrue(log.contains("exited: failed; stopped rank(s) [0, 2]"), log);
        // the survivors sleep for 120 s: only the launcher stopping them ends the job this soon
        assertTrue(seconds < 60, "took " + seconds + " s");
    }

    @Test
    void describesStatuses() {
        assertEquals("killed by signal 9 (SIGKILL)", ExitStatus.describe(137));
        assertEquals("wrong results", ExitStatus.describe(1));
        assertEquals("exit status 42", ExitStatus.describe(42));
    }
}
