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

    /** A cgroup v2 mount: its cpuset and its cpu.max ("max 100000" or "QUOTA PERIOD"). */
    private Path v2(String name, String cpus, String cpuMax) throws IOException {
        file(name + "/cpuset.cpus.effective", cpus + "\n");
        file(name + "/cpu.max", cpuMax + "\n");
        return dir.resolve(name);
    }

    /** A cgroup v1 mount: the cpuset in {@code cpusFile}, the CFS quota (-1: none) over a 100 ms period. */
    private Path v1(String name, String cpusFile, String cpus, long quotaMicros) throws IOException {
        file(name + "/cpuset/" + cpusFile, cpus + "\n");
        file(name + "/cpu/cpu.cfs_quota_us", quotaMicros + "\n");
        file(name + "/cpu/cpu.cfs_period_us", "100000\n");
        return dir.resolve(name);
    }

    /** A rank bound to one core of a 2-CPU host (affinity 1) counts the host's 2, not its own 1. */
    @Test
    void theCgroupsCpusetCountsNotTheProcesssAffinity() throws IOException {
        Path none = dir.resolve("no-online");
        assertEquals(2, HostCpus.count(v2("v2", "0-1", "max 100000"), none, 1));
        assertEquals(2, HostCpus.count(v1("v1", "cpuset.effective_cpus", "0-1", -1), none, 1));
    }

    /** A container of 16 visible CPUs limited to 2.5 or 2 CPUs of time may run three or two processes at once. */
    @Test
    void theCpuQuotaCapsTheCpuset() throws IOException {
        Path none = dir.resolve("no-online");
        assertEquals(3, HostCpus.count(v2("v2", "0-15", "250000 100000"), none, 1));
        assertEquals(2, HostCpus.count(v1("v1", "cpuset.cpus", "0-15", 200000), none, 1));
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
        assertEquals(4, HostCpus.count(v2("v2", "0-3", "100000 100000"), dir.resolve("no-online"), 4));
    }
}
