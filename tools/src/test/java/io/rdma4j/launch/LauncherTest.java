package io.rdma4j.launch;

import io.rdma4j.transport.testing.TimeLimits;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The launcher end to end: real child JVMs running {@link RankMain}. */
@Timeout(120)
class LauncherTest {

    /** One launcher run's exit status and what it printed. */
    record Run(int status, String out, String err, long millis) {
        String all() {
            return "exit " + status + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    private static Run launch(Map<String, String> extraEnv, String... args) throws InterruptedException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Map<String, String> env = new HashMap<>(System.getenv());
        env.putAll(extraEnv);
        long t0 = System.nanoTime();
        int status = Launcher.run(args, env, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
    }

    /** Launcher flags, then --main-class RankMain with its arguments. */
    private static String[] args(List<String> launcherFlags, String... rankArgs) {
        List<String> a = new ArrayList<>(launcherFlags);
        a.addAll(List.of("--java-opt", "-XX:TieredStopAtLevel=1", "--java-opt", "-XX:+UseSerialGC",
                "--java-opt", "-Xmx64m", "--main-class", RankMain.class.getName()));
        a.addAll(List.of(rankArgs));
        return a.toArray(String[]::new);
    }

    @Test
    void allRanksSucceedWithTheEnvContractAndMeetInTheLaunchersStore() throws Exception {
        Run r = launch(Map.of(), args(List.of("--nproc-per-node", "3"), "store"));
        assertEquals(0, r.status(), r::all);
        for (int rank = 0; rank < 3; rank++) {
            assertTrue(r.out().contains("[rank " + rank + "] env RANK=" + rank + " WORLD_SIZE=3 LOCAL_RANK=" + rank
                    + " LOCAL_WORLD_SIZE=3 NODE_RANK=0"), r::all);
            assertTrue(r.out().contains("[rank " + rank + "] met all 3 ranks in the store"), r::all);
            assertTrue(r.out().contains("[rank " + rank + "] finished"), r::all);
            // stderr goes to the launcher's stderr, prefixed too
            assertTrue(r.err().contains("[rank " + rank + "] a line on stderr from rank " + rank), r::all);
        }
        // every line is prefixed: none of a rank's lines leaked through unlabelled
        assertTrue(r.out().lines().allMatch(l -> l.matches("\\[rank [0-2]] .*")), r::all);
    }

    @Test
    void aFailingRankStopsTheOthersAndIsNamedWithItsExitCode() throws Exception {
        // rank 1 exits 7; ranks 0 and 2 would sleep a minute; rank 2 ignores SIGTERM (needs SIGKILL).
        // Rank 0's JVM must end within the grace period after its SIGTERM, and a JVM's shutdown
        // can outlast one second under emulation (the Soft-RoCE guest): the period is scaled.
        String grace = Long.toString(TimeLimits.scaled(Duration.ofSeconds(1)).toSeconds());
        Run r = launch(Map.of(), args(List.of("--nproc-per-node", "3", "--grace-period", grace),
                "codes=0,7,0", "sleepMs=60000", "failAfterMs=300", "stubborn=2", "failAfterStubborn"));
        assertEquals(7, r.status(), r::all);
        assertTrue(r.err().contains("rdma4j-launch: rank 1 failed: rank 1 exited with code 7"), r::all);
        assertTrue(r.out().contains("[rank 1] exiting with 7"), r::all);
        assertFalse(r.out().contains("finished"), r::all);
        // rank 0 ended by SIGTERM (143), rank 2 by SIGKILL after the grace period (137)
        assertTrue(r.err().contains("exit codes by local rank: [143, 7, 137]"), r::all);
        long limit = TimeLimits.scaled(Duration.ofSeconds(40)).toMillis();
        assertTrue(r.millis() < limit, () -> "took " + r.millis() + " ms\n" + r.all());
    }

    @Test
    void aCommandAfterDoubleDashRunsAsIs() throws Exception {
        Run r = launch(Map.of(), "--nproc-per-node", "2", "--", "sh", "-c", "echo rank $RANK of $WORLD_SIZE; exit $RANK");
        assertEquals(1, r.status(), r::all);
        assertTrue(r.out().contains("[rank 0] rank 0 of 2"), r::all);
        assertTrue(r.out().contains("[rank 1] rank 1 of 2"), r::all);
        assertTrue(r.err().contains("rank 1 exited with code 1"), r::all);
    }

    @Test
    void aFailureOnOneNodeStopsTheRanksOfTheOther() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        List<String> common = List.of("--nnodes", "2", "--nproc-per-node", "1", "--master-addr", "127.0.0.1",
                "--master-port", Integer.toString(port), "--job-token", "t0k3n", "--grace-period", "1");
        List<String> node0 = new ArrayList<>(common);
        node0.addAll(List.of("--node-rank", "0"));
        List<String> node1 = new ArrayList<>(common);
        node1.addAll(List.of("--node-rank", "1"));
        // the env vars the launchers read must not leak in from the surroundings
        Map<String, String> env = Map.of("RDMA4J_TCP_ADDRESS", "127.0.0.1");
        FutureTask<Run> first = new FutureTask<>(() -> launch(env, args(node0, "codes=0,5", "sleepMs=60000")));
        Thread.ofPlatform().name("node-0-launcher").start(first);
        Run second = launch(env, args(node1, "codes=0,5", "sleepMs=60000", "failAfterMs=1000"));
        Run r0 = first.get(60, TimeUnit.SECONDS);
        assertEquals(5, second.status(), second::all);
        assertTrue(second.err().contains("rank 1 failed: rank 1 exited with code 5"), second::all);
        assertEquals(1, r0.status(), r0::all);
        assertTrue(r0.err().contains("stopped the ranks: rank 1 exited with code 5 (node 1)"), r0::all);
        assertTrue(r0.out().contains("[rank 0] env RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 NODE_RANK=0"), r0::all);
        assertTrue(second.out().contains("[rank 1] env RANK=1 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 NODE_RANK=1"),
                second::all);
        assertFalse(r0.out().contains("finished"), r0::all);
    }

    @Test
    void usageErrorsSayWhatIsWrong() throws Exception {
        Run noToken = launch(Map.of("RDMA4J_JOB_TOKEN", ""), "--nnodes", "2", "--master-addr", "10.0.0.1", "--", "true");
        assertEquals(2, noToken.status(), noToken::all);
        assertTrue(noToken.err().contains("several nodes need one job token"), noToken::all);
        Run badRank = launch(Map.of(), "--nnodes", "2", "--node-rank", "2", "--", "true");
        assertEquals(2, badRank.status());
        assertTrue(badRank.err().contains("--node-rank 2 outside --nnodes 2"), badRank::all);
        Run noCommand = launch(Map.of(), "--nproc-per-node", "2");
        assertEquals(2, noCommand.status());
        assertTrue(noCommand.err().contains("no command"), noCommand::all);
    }
}
