package io.rdma4j.bench;

import io.rdma4j.bench.check.ElementCodec;
import io.rdma4j.bench.check.TestPattern;
import io.rdma4j.bench.launch.ExitStatus;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The soak command: short runs on shm and TCP, and its check catching one wrong element. */
class SoakTest {

    /**
     * A rank of a job that cannot join says why in one line: a malformed setting is a usage error,
     * a store nobody serves a failure naming the store (the communicator tools share this with
     * allreduce-perf).
     */
    @Test
    void aRankThatCannotJoinSaysWhyInOneLine() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
        assertEquals(ExitStatus.USAGE, new Soak().run(new String[0], UnservedJob.env("MASTER_PORT", "port"), ps, ps));
        assertEquals(ExitStatus.FAILED, new Soak().run(new String[0], UnservedJob.env(), ps, ps),
                out.toString(StandardCharsets.UTF_8));
        UnservedJob.assertSaidWithoutStackTrace(out.toString(StandardCharsets.UTF_8), "MASTER_PORT",
                "rank 1 could not reach the job's store");
    }

    @Test
    void shortSoaksOnShmAndTcpCheckEveryCallAndReport() {
        for (String transport : new String[] {"shm", "tcp"}) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            int status = run(out, "--ranks", "3", "-t", transport, "--minutes", "0.1", "--max-count", "4096",
                    "--report-seconds", "2");
            String text = out.toString(StandardCharsets.UTF_8);
            assertEquals(ExitStatus.OK, status, text);
            assertTrue(text.contains("# soak: 0 wrong elements on all ranks (counted through the store): OK"), text);
            String last = text.lines().filter(l -> l.contains("# soak rank 0:")).reduce((a, b) -> b)
                    .orElseThrow(() -> new AssertionError("no report in\n" + text));
            long calls = Long.parseLong(last.replaceAll(".* s +(\\d+) calls.*", "$1"));
            assertTrue(calls >= 64, transport + ": " + last);
            assertTrue(last.matches(".*fds +\\d+ threads +\\d+"), last);
        }
    }

    @Test
    void oneWrongElementIsCounted() {
        TestPattern p = new TestPattern(DataType.BF16, ReduceOp.SUM);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment result = arena.allocate(100 * 2L);
            for (long i = 0; i < 100; i++) {
                ElementCodec.put(result, DataType.BF16, i, p.reduced(4, i + 17));
            }
            assertEquals(0, Soak.check(p, 4, result, 100, i -> p.reduced(4, i + 17)));
            ElementCodec.put(result, DataType.BF16, 42, p.reduced(4, 42 + 17) + 1);
            assertEquals(1, Soak.check(p, 4, result, 100, i -> p.reduced(4, i + 17)));
            long stale = Soak.check(p, 4, result, 100, i -> p.reduced(4, i + 18));
            assertTrue(stale > 50, "a result of another call's offset: most elements differ, " + stale + " did");
        }
    }

    private static int run(ByteArrayOutputStream out, String... args) {
        PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
        return new Soak().run(args, Map.of(), ps, ps);
    }
}
