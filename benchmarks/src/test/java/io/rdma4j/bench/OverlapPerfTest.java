package io.rdma4j.bench;

import io.rdma4j.bench.launch.ExitStatus;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** overlap-perf: a short run of 2 local ranks, and its usage errors. */
class OverlapPerfTest {

    @Test
    void reportsEachBackwardKindWithItsEfficiency() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int status = run(out, "--ranks", "2", "-t", "shm", "--layers", "4", "--layer-bytes", "64K", "--bucket-bytes",
                "128K", "-n", "3", "-w", "2", "--gradients", "copies");
        String table = out.toString(StandardCharsets.UTF_8);
        assertEquals(ExitStatus.OK, status, table);
        assertTrue(table.contains("4 layers x 65536 B f32 (copied), 2 buckets"), table);
        assertRows(table, List.of("wait", "cpu"));
    }

    /**
     * The event backward marks every gradient at once, each with its layer's end: the last
     * bucket's allreduce must still wait for the backward's end (it would be done long before if
     * the conditions were not waited for).
     */
    @Test
    void theEventBackwardsBucketsWaitForTheirLayersEnds() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int status = run(out, "--ranks", "2", "-t", "shm", "--layers", "4", "--layer-bytes", "64K", "--bucket-bytes",
                "128K", "-n", "3", "-w", "2", "--backward", "event", "--layer-us", "2000");
        String table = out.toString(StandardCharsets.UTF_8);
        assertEquals(ExitStatus.OK, status, table);
        assertTrue(table.contains("4 layers x 65536 B f32 (bucket views), 2 buckets"), table);
        assertRows(table, List.of("event"));
    }

    /**
     * Each of {@code kinds} has a row of the 4-layer, 2-bucket runs above whose columns agree
     * with each other.
     */
    private static void assertRows(String table, List<String> kinds) {
        for (String kind : kinds) {
            String row = table.lines().filter(l -> l.contains("  " + kind + " ")).findFirst()
                    .orElseThrow(() -> new AssertionError("no " + kind + " row in\n" + table));
            // kind, layer (us), backward alone, allreduce alone, both, after the backward (ms), efficiency, bound
            String[] f = row.substring(row.indexOf(kind) + kind.length()).trim().split(" +");
            assertEquals(7, f.length, row);
            double layer = Double.parseDouble(f[0]);
            double alone = Double.parseDouble(f[1]);
            double allReduce = Double.parseDouble(f[2]);
            double both = Double.parseDouble(f[3]);
            double after = Double.parseDouble(f[4]);
            double efficiency = Double.parseDouble(f[5]);
            double bound = Double.parseDouble(f[6]);
            assertTrue(layer > 0 && alone > 0 && allReduce > 0 && both > 0, row);
            assertTrue(alone >= 4 * layer / 1e3 * 0.99, "4 layers last at least 4 layer times: " + row);
            // the last bucket's allreduce starts when the backward has ended: finish waits for it
            assertTrue(after > 0 && after < both, "the wait after the backward is part of both: " + row);
            assertEquals((alone + allReduce) / both, efficiency, 0.01 + 0.002 * efficiency, row);
            assertEquals((alone + allReduce) / (alone + allReduce / 2), bound, 0.01 + 0.002 * bound, "2 buckets: " + row);
        }
    }

    @Test
    void everyBodyFollowsTheIdleBackwardAsOftenAsTheOthers() {
        // bodies as inTurns passes them: 0 the allreduce alone, 1 the backward alone, 2 both
        int[][] follows = new int[3][3]; // [body][the body before it]
        int previous = -1;
        for (int iteration = -5; iteration < 7; iteration++) { // warm-up iterations count negative
            boolean[] ran = new boolean[3];
            for (int turn = 0; turn < 3; turn++) {
                int b = OverlapPerf.bodyAt(iteration, turn, 3);
                assertFalse(ran[b], "body " + b + " twice in iteration " + iteration);
                ran[b] = true;
                if (previous >= 0) {
                    follows[b][previous]++;
                }
                previous = b;
            }
        }
        assertTrue(follows[2][1] > 0 && follows[0][1] > 0, "both and the allreduce alone each follow the backward alone");
        assertEquals(follows[2][1], follows[0][1], 1, "as often as each other");
    }

    @Test
    void badOptionsAreUsageErrors() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertEquals(ExitStatus.USAGE, run(out, "--gradients", "shared"));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("--gradients needs views or copies"));
        assertEquals(ExitStatus.USAGE, run(out, "--backward", "event", "--gradients", "copies"));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("--backward event needs --gradients views"));
        assertEquals(ExitStatus.USAGE, run(out, "--layers", "0"));
        assertEquals(ExitStatus.USAGE, run(out, "--layer-bytes", "6"));
        assertEquals(ExitStatus.USAGE, run(out, "-t", "ib"));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("unknown transport 'ib'"));
    }

    private static int run(ByteArrayOutputStream out, String... args) {
        PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
        return new OverlapPerf().run(args, Map.of(), ps, ps);
    }
}
