package io.rdma4j.bench.launch;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class CoreBindingTest {
    private static final List<String> CMD = List.of("java", "-cp", "x", "Main");

    @Test
    void ranksThatFitGetACpuEachInTheAllowedSet() {
        List<Integer> allowed = CoreBinding.allowedCpus();
        assertFalse(allowed.isEmpty(), "Linux lists this process's allowed CPUs");
        Map<String, String> env = Map.of("PATH", System.getenv("PATH"));
        CoreBinding b = CoreBinding.forJob(allowed.size(), env);
        assertTrue(b.binds(), "taskset is on the PATH here (util-linux)");
        for (int r = 0; r < allowed.size(); r++) {
            List<String> c = b.command(r, CMD);
            assertEquals(List.of("taskset", "-c", Integer.toString(allowed.get(r))), c.subList(0, 3));
            assertEquals(CMD, c.subList(3, c.size()));
        }
    }

    @Test
    void ranksThatOutnumberTheCpusShareThemRoundRobin() {
        List<Integer> allowed = CoreBinding.allowedCpus();
        assumeTrue(allowed.size() >= 2, "needs two allowed CPUs");
        int ranks = 2 * allowed.size() + 1;
        CoreBinding b = CoreBinding.forJob(ranks, Map.of("PATH", System.getenv("PATH")));
        assertTrue(b.binds());
        for (int r = 0; r < ranks; r++) {
            assertEquals(List.of("taskset", "-c", Integer.toString(allowed.get(r % allowed.size()))),
                    b.command(r, CMD).subList(0, 3), "rank " + r);
        }
    }

    @Test
    void noneOrNoTasksetLeaveTheCommandAlone() {
        String path = System.getenv("PATH");
        assertFalse(CoreBinding.forJob(1, Map.of("PATH", path, "RDMA4J_BIND", "none")).binds());
        assertFalse(CoreBinding.forJob(1, Map.of("PATH", "/nonexistent")).binds(), "no taskset");
        assertEquals(CMD, CoreBinding.none().command(0, CMD));
        assertThrows(IllegalArgumentException.class, () -> CoreBinding.forJob(1, Map.of("RDMA4J_BIND", "socket")));
    }
}
