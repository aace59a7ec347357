package io.rdma4j.examples;

import io.rdma4j.examples.dl4j.Dl4jDataParallelMlp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The README's DL4J example runs through the launcher and ends with the ranks' parameters compared. */
@Timeout(180)
class Dl4jDataParallelMlpTest {
    @Test
    void twoRanksTrainAndEndWithBitIdenticalParameters() throws Exception {
        List<String> args = new ArrayList<>(List.of("--java-opt", "--sun-misc-unsafe-memory-access=allow"));
        args.addAll(Ranks.launcherArgs(2, Dl4jDataParallelMlp.class, "--steps", "20", "--warmup-steps", "2", "--hidden", "32"));
        Ranks.Launch l = Ranks.launch(Map.of(), args);
        assertEquals(0, l.status(), l::all);
        assertTrue(Pattern.compile("20 steps on 2 rank\\(s\\), global batch 256, \\d+ parameters, zero-copy gradient allreduce")
                .matcher(l.out()).find(), l::all);
        assertTrue(l.out().contains("[rank 0] parameters bit-identical across 2 ranks"), l::all);
    }
}
