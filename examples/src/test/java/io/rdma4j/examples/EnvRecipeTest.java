package io.rdma4j.examples;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The env:// recipes of docs/multi-host.md: the variables as torchrun-style launchers and
 * Kubeflow's PyTorchJob set them, by hand, with {@link AllReduceCheck} as the job.
 */
@Timeout(120)
class EnvRecipeTest {

    /**
     * One process per "pod", as a PyTorchJob with nproc 1 (or any orchestrator) starts them:
     * MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK (+ LOCAL_*) and the job token; rank 0 hosts
     * the store.
     */
    @Test
    void ranksStartedByHandWithTheEnvContract() throws Exception {
        int port = Shell.freePort();
        Ranks.Launch l = Ranks.startByHand(2, r -> Ranks.java(AllReduceCheck.class, "100000"), r -> Map.of(
                "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", Integer.toString(port), "WORLD_SIZE", "2",
                "RANK", Integer.toString(r), "LOCAL_RANK", Integer.toString(r), "LOCAL_WORLD_SIZE", "2",
                "RDMA4J_JOB_TOKEN", "by-hand-token", "RDMA4J_TRANSPORT", "tcp", "RDMA4J_TCP_ADDRESS", "127.0.0.1"),
                Duration.ofSeconds(90));
        assertEquals(0, l.status(), l::all);
        for (int r = 0; r < 2; r++) {
            assertTrue(l.out().contains("[rank " + r + "] allreduce OK rank " + r + "/2 "), l::all);
        }
    }

    /**
     * Two "pods" of a PyTorchJob with nprocPerNode 2: each runs {@code rdma4j launch} with no
     * flags, the launcher reading PET_NNODES, PET_NODE_RANK, PET_NPROC_PER_NODE and
     * MASTER_ADDR/MASTER_PORT as Kubeflow sets them; pods are told apart by RDMA4J_HOST_ID (on
     * a cluster, their host names), so the world is 2 hosts x 2 ranks and two-hop runs.
     */
    @Test
    void twoPodsOfAPyTorchJobEachRunningTheLauncher() throws Exception {
        int port = Shell.freePort();
        FutureTask<Ranks.Launch> pod0 = new FutureTask<>(() -> Ranks.launch(pod(0, port),
                Ranks.launcherArgs(2, AllReduceCheck.class, "100000")));
        Thread.ofPlatform().name("pod-0").start(pod0);
        Ranks.Launch l1 = Ranks.launch(pod(1, port), Ranks.launcherArgs(2, AllReduceCheck.class, "100000"));
        Ranks.Launch l0 = pod0.get(90, TimeUnit.SECONDS);
        assertEquals(0, l0.status(), l0::all);
        assertEquals(0, l1.status(), l1::all);
        String out = l0.out() + l1.out();
        for (int r = 0; r < 4; r++) {
            assertTrue(out.contains("[rank " + r + "] allreduce OK rank " + r + "/4 local " + (r % 2)
                    + "/2 hosts 2 provider tcp algorithm twohop"), out);
        }
    }

    private static Map<String, String> pod(int index, int port) {
        Map<String, String> env = new HashMap<>();
        // what the PyTorchJob controller sets on each pod
        env.put("PET_NNODES", "2");
        env.put("PET_NODE_RANK", Integer.toString(index));
        env.put("PET_NPROC_PER_NODE", "2");
        env.put("MASTER_ADDR", "127.0.0.1");
        env.put("MASTER_PORT", Integer.toString(port));
        env.put("WORLD_SIZE", "2");
        env.put("RANK", Integer.toString(index));
        // what the job's pod template adds for rdma4j (token from a Secret)
        env.put("RDMA4J_JOB_TOKEN", "pytorchjob-secret");
        env.put("RDMA4J_HOST_ID", "pod-" + index);
        env.put("RDMA4J_TRANSPORT", "tcp");
        env.put("RDMA4J_ALGO", "twohop");
        env.put("RDMA4J_TCP_ADDRESS", "127.0.0.1");
        return env;
    }

}
