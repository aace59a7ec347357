package io.rdma4j.examples;

import io.rdma4j.examples.djl.DjlDataParallelMlp;
import io.rdma4j.examples.dl4j.Dl4jDataParallelMlp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The README's DL4J and DJL examples run through the launcher and end with the ranks' parameters compared. */
@Timeout(180)
class FrameworkExamplesTest {
    private static Ranks.Launch twoRanks(Class<?> example, String... javaOpts) throws InterruptedException {
        List<String> args = new ArrayList<>();
        for (String opt : javaOpts) {
            args.add("--java-opt");
            args.add(opt);
        }
        args.addAll(Ranks.launcherArgs(2, example, "--steps", "20", "--warmup-steps", "2", "--hidden", "32"));
        return Ranks.launch(Map.of("OMP_NUM_THREADS", "1"), args);
    }

    private static void assertTrainedAndCompared(Ranks.Launch l, String gradientPath) {
        assertEquals(0, l.status(), l::all);
        assertTrue(Pattern.compile("\\[rank 0\\] 20 steps on 2 rank\\(s\\), global batch 256, \\d+ parameters, "
                + gradientPath + " gradient allreduce: [0-9.]+ ms per step").matcher(l.out()).find(), l::all);
        assertTrue(l.out().contains("[rank 0] parameters bit-identical across 2 ranks"), l::all);
    }

    @Test
    void dl4jExampleTrainsTwoRanksToBitIdenticalParameters() throws Exception {
        assertTrainedAndCompared(twoRanks(Dl4jDataParallelMlp.class, "--sun-misc-unsafe-memory-access=allow"), "zero-copy");
    }

    @Test
    void djlExampleTrainsTwoRanksToBitIdenticalParameters() throws Exception {
        assertTrainedAndCompared(twoRanks(DjlDataParallelMlp.class), "bucketed");
    }
}
