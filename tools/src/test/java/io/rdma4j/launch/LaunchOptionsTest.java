package io.rdma4j.launch;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LaunchOptionsTest {

    @Test
    void kubeflowPetVariablesAreTheDefaults() {
        Map<String, String> pod = Map.of("PET_NNODES", "3", "PET_NODE_RANK", "2", "PET_NPROC_PER_NODE", "4",
                "PET_MASTER_ADDR", "job-master-0", "PET_MASTER_PORT", "23456", "RDMA4J_JOB_TOKEN", "s3cret");
        LaunchOptions o = LaunchOptions.parse(new String[] {"--", "train"}, pod);
        assertEquals(4, o.nprocPerNode());
        assertEquals(3, o.nnodes());
        assertEquals(2, o.nodeRank());
        assertEquals(12, o.worldSize());
        assertEquals("job-master-0", o.masterAddr());
        assertEquals(23456, o.masterPort());
        assertEquals("s3cret", o.jobToken());
        assertEquals(List.of("train"), o.command());
        Map<String, String> e = Launcher.rankEnvironment(o, "s3cret", 23456, 3, Map.of());
        assertEquals("11", e.get("RANK"));
        assertEquals("12", e.get("WORLD_SIZE"));
        assertEquals("3", e.get("LOCAL_RANK"));
        assertEquals("4", e.get("LOCAL_WORLD_SIZE"));
        assertEquals("2", e.get("NODE_RANK"));
        assertEquals("job-master-0", e.get("MASTER_ADDR"));
        assertEquals("23456", e.get("MASTER_PORT"));
        assertEquals("0", e.get("RDMA4J_STORE_SERVER"));
        // several nodes: the TCP provider picks the node's interface, not loopback
        assertNull(e.get("RDMA4J_TCP_ADDRESS"));
    }

    @Test
    void flagsWinAndTorchrunSpellingsAreAccepted() {
        LaunchOptions o = LaunchOptions.parse(new String[] {"--nproc_per_node=2", "--master-port", "0", "cmd", "--x"},
                Map.of("PET_NPROC_PER_NODE", "8", "MASTER_PORT", "1234"));
        assertEquals(2, o.nprocPerNode());
        assertEquals(0, o.masterPort());
        assertEquals("127.0.0.1", o.masterAddr());
        assertNull(o.jobToken());
        // everything from the first non-option on belongs to the command
        assertEquals(List.of("cmd", "--x"), o.command());
        Map<String, String> e = Launcher.rankEnvironment(o, "t", 5555, 1, Map.of());
        assertEquals("127.0.0.1", e.get("RDMA4J_TCP_ADDRESS"));
    }

    @Test
    void mainClassRunsOnThisJvmWithNativeAccess() {
        LaunchOptions o = LaunchOptions.parse(new String[] {"--java-opt", "-Xmx1g", "--classpath", "a.jar:b",
                "--main-class", "x.Main", "--steps", "3"}, Map.of());
        List<String> c = o.command();
        assertTrue(c.getFirst().endsWith("/bin/java"), c::toString);
        assertEquals(List.of("--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector", "-Xmx1g", "-cp", "a.jar:b", "x.Main", "--steps", "3"),
                c.subList(1, c.size()));
    }

    @Test
    void badValuesAreRejectedByName() {
        Map<String, String> none = Map.of();
        assertTrue(assertThrows(LaunchOptions.UsageException.class,
                () -> LaunchOptions.parse(new String[] {"--nproc-per-node", "0", "x"}, none)).getMessage()
                .contains("nproc-per-node must be >= 1"));
        assertTrue(assertThrows(LaunchOptions.UsageException.class,
                () -> LaunchOptions.parse(new String[] {"--master-port", "70000", "x"}, none)).getMessage()
                .contains("master-port must be a port"));
        assertTrue(assertThrows(LaunchOptions.UsageException.class,
                () -> LaunchOptions.parse(new String[] {"--nnodes", "2", "--master-addr", "h", "--job-token", "t",
                        "--master-port", "0", "x"}, none)).getMessage().contains("one node only"));
        assertTrue(assertThrows(LaunchOptions.UsageException.class,
                () -> LaunchOptions.parse(new String[] {"--bogus", "1", "x"}, none)).getMessage()
                .contains("unknown option --bogus"));
        assertTrue(assertThrows(LaunchOptions.UsageException.class,
                () -> LaunchOptions.parse(new String[] {"--nnodes", "2", "x"}, none)).getMessage()
                .contains("--master-addr (node 0's address) is required"));
    }
}
