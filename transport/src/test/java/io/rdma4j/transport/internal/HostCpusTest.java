package io.rdma4j.transport.internal;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The job's CPUs from cgroup and sysfs files, written here as v2 and v1 hosts and containers lay them out. */
class HostCpusTest {
    @TempDir
    Path dir;

    private Path file(String name, String text) throws IOException {
        Path f = dir.resolve(name);
        Files.createDirectories(f.getParent());
        Files.writeString(f, text);
        return f;
    }

    @Test
    void cpuListsAreCounted() {
        assertEquals(1, HostCpus.countCpus("0\n"));
        assertEquals(4, HostCpus.countCpus("0-3"));
        assertEquals(7, HostCpus.countCpus("0-3,8,10-11\n"));
        assertEquals(-1, HostCpus.countCpus(""));
        assertEquals(-1, HostCpus.countCpus("3-1"));
        assertEquals(-1, HostCpus.countCpus("max"));
    }

    /** A rank bound to one core of a 2-CPU host (affinity 1) counts the host's 2, not its own 1. */
    @Test
    void theCgroupsCpusetCountsNotTheProcesssAffinity() throws IOException {
        Path v2 = dir.resolve("v2");
        file("v2/cpuset.cpus.effective", "0-1\n");
        file("v2/cpu.max", "max 100000\n");
        assertEquals(2, HostCpus.count(v2, dir.resolve("no-online"), 1));

        Path v1 = dir.resolve("v1");
        file("v1/cpuset/cpuset.effective_cpus", "0-1\n");
        file("v1/cpu/cpu.cfs_quota_us", "-1\n");
        file("v1/cpu/cpu.cfs_period_us", "100000\n");
        assertEquals(2, HostCpus.count(v1, dir.resolve("no-online"), 1));
    }

    /** A container of 16 visible CPUs limited to 2.5 CPUs of time may run three processes at once. */
    @Test
    void theCpuQuotaCapsTheCpuset() throws IOException {
        Path v2 = dir.resolve("v2");
        file("v2/cpuset.cpus.effective", "0-15\n");
        file("v2/cpu.max", "250000 100000\n");
        assertEquals(3, HostCpus.count(v2, dir.resolve("no-online"), 1));

        Path v1 = dir.resolve("v1");
        file("v1/cpuset/cpuset.cpus", "0-15\n");
        file("v1/cpu/cpu.cfs_quota_us", "200000\n");
        file("v1/cpu/cpu.cfs_period_us", "100000\n");
        assertEquals(2, HostCpus.count(v1, dir.resolve("no-online"), 1));
    }

    @Test
    void withoutACgroupTheOnlineCpusCountAndWithoutThoseTheAffinity() throws IOException {
        Path online = file("online", "0-7\n");
        assertEquals(8, HostCpus.count(dir.resolve("no-cgroup"), online, 2));
        assertEquals(2, HostCpus.count(dir.resolve("no-cgroup"), dir.resolve("no-online"), 2));
        file("garbled/cpuset.cpus.effective", "all of them\n");
        assertEquals(8, HostCpus.count(dir.resolve("garbled"), online, 2), "an unreadable list is skipped");
    }

    /** The affinity lies within the cgroup's CPUs, so a smaller count read from files is not believed. */
    @Test
    void neverFewerThanTheAffinity() throws IOException {
        Path v2 = dir.resolve("v2");
        file("v2/cpuset.cpus.effective", "0-3\n");
        file("v2/cpu.max", "100000 100000\n");
        assertEquals(4, HostCpus.count(v2, dir.resolve("no-online"), 4));
    }
}
