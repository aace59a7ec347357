package io.rdma4j.examples;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The mpirun recipe of docs/multi-host.md with Debian's Open MPI: mpirun starts 4 plain JVMs
 * (no MPI inside), rdma4j reads OMPI_COMM_WORLD_RANK/SIZE for rank and size, and
 * MASTER_ADDR/MASTER_PORT/RDMA4J_JOB_TOKEN come from mpirun's -x exports.
 */
@Timeout(150)
class MpirunRecipeTest {

    @Test
    void fourRanksStartedByMpirunAllReduce() throws Exception {
        Path mpirun = Shell.which("mpirun");
        if (mpirun == null) {
            System.out.println("SKIPPED MpirunRecipeTest: mpirun not found (apt-get install openmpi-bin)");
        }
        Assumptions.assumeTrue(mpirun != null, "mpirun not found on PATH (Debian: apt-get install openmpi-bin)");
        List<String> cmd = new ArrayList<>(List.of(mpirun.toString(), "--allow-run-as-root", "--oversubscribe",
                "-np", "4",
                "-x", "MASTER_ADDR", "-x", "MASTER_PORT", "-x", "RDMA4J_JOB_TOKEN",
                "-x", "RDMA4J_TRANSPORT", "-x", "RDMA4J_TCP_ADDRESS"));
        cmd.addAll(Ranks.java(AllReduceCheck.class, "200000"));
        Shell.Result r = Shell.run(cmd, Map.of(
                "MASTER_ADDR", "127.0.0.1",
                "MASTER_PORT", Integer.toString(Shell.freePort()),
                "RDMA4J_JOB_TOKEN", "mpirun-recipe-token",
                "RDMA4J_TRANSPORT", "tcp",
                "RDMA4J_TCP_ADDRESS", "127.0.0.1"), Duration.ofSeconds(120));
        assertEquals(0, r.status(), r::output);
        for (int rank = 0; rank < 4; rank++) {
            assertTrue(r.output().contains("allreduce OK rank " + rank + "/4 local " + rank + "/4 hosts 1 provider tcp"),
                    r::output);
        }
    }
}
