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
    }

    @Test
    void aMissingFileIsUnknownAndThisMachineSaysSomething(@TempDir Path dir) throws Exception {
        assertEquals(0, OnlineCpus.read(dir.resolve("none")));
        Path file = Files.writeString(dir.resolve("online"), "0-5\n");
        assertEquals(6, OnlineCpus.read(file));
        assertTrue(OnlineCpus.count() >= 1, "Linux lists its online CPUs");
    }

    @Test
    void pollersOutnumberTheMachineOnlyBeyondItsOnlineCpus() {
        assertFalse(OnlineCpus.outnumberedBy(2, 2, 1), "two ranks bound to a core each: one CPU each, two online");
        assertTrue(OnlineCpus.outnumberedBy(4, 2, 2), "four ranks on two cores");
        assertFalse(OnlineCpus.outnumberedBy(4, 0, 2), "the machine does not say: not certain");
        assertFalse(OnlineCpus.outnumberedBy(3, 2, 4), "more CPUs for this process than listed online: those count");
    }
}
