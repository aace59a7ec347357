package io.rdma4j.nativesupport.internal;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class OnlineCpusTest {

    @Test
    void linuxCpuListsAreRead() {
        assertEquals(List.of(0, 1), OnlineCpus.list("0-1"));
        assertEquals(List.of(0), OnlineCpus.list("0"));
        assertEquals(List.of(0, 1, 2, 3, 8, 10, 11), OnlineCpus.list("0-3,8,10-11"));
        assertEquals(List.of(0, 1, 2, 5), OnlineCpus.list("0 - 2, 5"), "blanks around numbers");
        assertEquals(List.of(), OnlineCpus.list(""), "malformed: none");
        assertEquals(List.of(), OnlineCpus.list("3-1"), "malformed: none");
        assertEquals(List.of(), OnlineCpus.list("0,x"), "malformed: none");
        assertEquals(List.of(), OnlineCpus.list("-1"), "malformed: none");
        assertEquals(List.of(), OnlineCpus.list("0-2147483647"), "beyond any CPU Linux numbers: none (not 2^31 numbers)");
        assertEquals(OnlineCpus.MAX_CPU + 1, OnlineCpus.list("0-" + OnlineCpus.MAX_CPU).size());
    }

    @Test
    void aMissingFileIsUnknownAndThisMachineSaysSomething(@TempDir Path dir) throws Exception {
        assertEquals(0, OnlineCpus.read(dir.resolve("none")));
        Path file = Files.writeString(dir.resolve("online"), "0-5\n");
        assertEquals(6, OnlineCpus.read(file));
        assertTrue(OnlineCpus.count() >= 1, "Linux lists its online CPUs");
    }

    /**
     * A container's CPU quota or CPU set lowers the machine's count (a pod of 2 CPUs on a node of
     * 64 ran 8 ranks as if they had 64 CPUs, spinning); no limit, or an unreadable one, leaves it.
     */
    @Test
    void aContainersCpuLimitCounts(@TempDir Path dir) throws Exception {
        Path v2 = Files.createDirectories(dir.resolve("v2"));
        assertEquals(0, OnlineCpus.cgroupLimit(v2, ""), "no files: no limit");
        Files.writeString(v2.resolve("cpu.max"), "max 100000\n");
        Files.writeString(v2.resolve("cpuset.cpus.effective"), "0-63\n");
        assertEquals(64, OnlineCpus.cgroupLimit(v2, ""), "no quota: the CPU set");
        Files.writeString(v2.resolve("cpu.max"), "150000 100000\n");
        assertEquals(2, OnlineCpus.cgroupLimit(v2, ""), "1.5 CPUs of quota: 2 run at once");
        Files.writeString(v2.resolve("cpuset.cpus.effective"), "4\n");
        assertEquals(1, OnlineCpus.cgroupLimit(v2, ""), "the lower of quota and set");

        Path v1 = Files.createDirectories(dir.resolve("v1"));
        Files.createDirectories(v1.resolve("cpu"));
        Files.createDirectories(v1.resolve("cpuset"));
        Files.writeString(v1.resolve("cpu/cpu.cfs_quota_us"), "-1\n");
        Files.writeString(v1.resolve("cpu/cpu.cfs_period_us"), "100000\n");
        assertEquals(0, OnlineCpus.cgroupLimit(v1, ""), "v1 without quota or set");
        Files.writeString(v1.resolve("cpu/cpu.cfs_quota_us"), "300000\n");
        Files.writeString(v1.resolve("cpuset/cpuset.effective_cpus"), "0-7\n");
        assertEquals(3, OnlineCpus.cgroupLimit(v1, ""));
        Files.writeString(v1.resolve("cpu/cpu.cfs_quota_us"), "lots\n");
        assertEquals(8, OnlineCpus.cgroupLimit(v1, ""), "a malformed quota is none");

        assertEquals(2, OnlineCpus.limited(64, 2));
        assertEquals(16, OnlineCpus.limited(16, 64), "a limit above the online CPUs changes nothing");
        assertEquals(64, OnlineCpus.limited(64, 0));
        assertEquals(2, OnlineCpus.limited(0, 2), "unknown online CPUs: the limit");
        assertTrue(OnlineCpus.outnumberedBy(8, OnlineCpus.limited(64, 2), 2), "8 ranks in a pod of 2 CPUs take turns");
    }

    /**
     * Without a cgroup namespace the process's groups sit below the root it reads (a Slurm job, a
     * container sharing the host's cgroup view): their limits and those of the groups above them
     * count, as /proc/self/cgroup names them; a path that leaves the root does not.
     */
    @Test
    void theLimitsOfThisProcesssOwnGroupsAndTheirParentsCount(@TempDir Path dir) throws Exception {
        Path v2 = dir.resolve("v2");
        write(v2, "cpuset.cpus.effective", "0-63");
        write(v2, "kubepods/pod1/cpu.max", "400000 100000");
        write(v2, "kubepods/pod1/ctr/cpu.max", "max 100000");
        assertEquals(64, OnlineCpus.cgroupLimit(v2, ""), "the root alone");
        assertEquals(4, OnlineCpus.cgroupLimit(v2, "0::/kubepods/pod1/ctr\n"), "the pod's quota above the container");
        write(v2, "kubepods/pod1/ctr/cpuset.cpus.effective", "2-3");
        assertEquals(2, OnlineCpus.cgroupLimit(v2, "0::/kubepods/pod1/ctr\n"), "the container's own CPU set");
        assertEquals(64, OnlineCpus.cgroupLimit(v2, "0::/../../etc\n"), "a path leaving the root is not read");

        Path v1 = dir.resolve("v1");
        write(v1, "cpuset/slurm/job_7/cpuset.effective_cpus", "0-2,8");
        write(v1, "cpu/docker/abc/cpu.cfs_quota_us", "250000");
        write(v1, "cpu/docker/abc/cpu.cfs_period_us", "100000");
        assertEquals(4, OnlineCpus.cgroupLimit(v1, "5:cpuset:/slurm/job_7\n3:pids:/other\n"));
        assertEquals(3, OnlineCpus.cgroupLimit(v1, "5:cpuset:/slurm/job_7\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/\n"));
        assertEquals(0, OnlineCpus.cgroupLimit(v1, "garbage\n\n"));
    }

    /** Writes a cgroup file's line under {@code root}, making the groups' folders on the way. */
    private static void write(Path root, String file, String line) throws java.io.IOException {
        Path f = root.resolve(file);
        Files.createDirectories(f.getParent());
        Files.writeString(f, line + "\n");
    }

    @Test
    void pollersOutnumberTheMachineOnlyBeyondItsOnlineCpus() {
        assertFalse(OnlineCpus.outnumberedBy(2, 2, 1), "two ranks bound to a core each: one CPU each, two online");
        assertTrue(OnlineCpus.outnumberedBy(4, 2, 2), "four ranks on two cores");
        assertFalse(OnlineCpus.outnumberedBy(4, 0, 2), "the machine does not say: not certain");
        assertFalse(OnlineCpus.outnumberedBy(3, 2, 4), "more CPUs for this process than listed online: those count");
    }

    @Test
    void pollersAreOnCpusOfTheirOwnOnlyWhenNoCpuIsInTwoOfTheirAffinities() {
        assertTrue(OnlineCpus.eachOnOwnCpus(List.of("0", "1"), 2), "taskset -c 0 / -c 1");
        assertTrue(OnlineCpus.eachOnOwnCpus(List.of("0-1", "2-3", "4"), 8), "sets of several CPUs, apart");
        assertFalse(OnlineCpus.eachOnOwnCpus(List.of("0-1", "0-1"), 2), "unbound: one affinity shared");
        assertFalse(OnlineCpus.eachOnOwnCpus(List.of("0", "0"), 2), "both bound to one CPU (a container's cpuset)");
        assertFalse(OnlineCpus.eachOnOwnCpus(List.of("0-1", "1-2"), 4), "overlapping");
        assertFalse(OnlineCpus.eachOnOwnCpus(List.of("0", "1", "2"), 2), "more of them than the machine may keep busy");
        assertTrue(OnlineCpus.eachOnOwnCpus(List.of("0", "1", "2"), 0), "the machine does not say: the affinities do");
        assertFalse(OnlineCpus.eachOnOwnCpus(List.of("0", ""), 2), "an affinity unknown");
        assertFalse(OnlineCpus.eachOnOwnCpus(List.of("0", "1-x"), 2), "an affinity malformed");
    }

    @Test
    void thisProcesssAffinityIsReadFromItsStatus() {
        assertEquals("0-3,8", OnlineCpus.allowedList("Name:\tjava\nCpus_allowed:\t10f\nCpus_allowed_list:\t0-3,8\nMems_allowed:\t1\n"));
        assertEquals("", OnlineCpus.allowedList("Name:\tjava\n"), "not said: unknown");
        List<Integer> mine = OnlineCpus.list(OnlineCpus.allowedList());
        assertTrue(mine.size() >= Runtime.getRuntime().availableProcessors(),
                "this JVM's CPUs come from its affinity, lowered by a CPU quota at most: " + mine);
    }
}
