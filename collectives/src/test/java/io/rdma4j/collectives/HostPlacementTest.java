package io.rdma4j.collectives;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class HostPlacementTest {

    private static HostPlacement of(String... hostAndCpus) {
        String[] values = new String[hostAndCpus.length / 2];
        for (int r = 0; r < values.length; r++) {
            values[r] = HostPlacement.encode(hostAndCpus[2 * r], hostAndCpus[2 * r + 1]);
        }
        return HostPlacement.decode(values);
    }

    @Test
    void eachHostsRanksAreJudgedByTheirOwnAffinities() {
        // host a: two ranks bound apart; host b: two ranks sharing one affinity (unbound)
        HostPlacement p = of("a", "0", "b", "0-1", "a", "1", "b", "0-1");
        assertEquals(2, p.topology().hosts());
        assertArrayEquals(new int[] {0, 2}, p.topology().ranksOfHost(p.topology().hostOf(0)));
        assertTrue(p.eachOnOwnCpus(0) && p.eachOnOwnCpus(2), "host a's ranks each have a CPU of their own");
        assertFalse(p.eachOnOwnCpus(1) || p.eachOnOwnCpus(3), "host b's ranks share their CPUs");
    }

    @Test
    void ranksBoundToOneCpuTogetherAreNotApart() {
        HostPlacement p = of("h", "3", "h", "3");
        assertFalse(p.eachOnOwnCpus(0), "a container's one-CPU set, say");
    }

    @Test
    void aHostIdentityMayHoldLineBreaksAndAValueWithoutAffinityIsUnknown() {
        HostPlacement p = HostPlacement.decode(new String[] {
                HostPlacement.encode("odd\nhost", "0"), HostPlacement.encode("odd\nhost", "1"), "plain-host"});
        assertEquals(2, p.topology().hosts(), "the identity is everything before the last line break");
        assertEquals(2, p.topology().localSize(0));
        assertTrue(p.eachOnOwnCpus(1));
        assertEquals(1, p.topology().localSize(2));
        assertFalse(p.eachOnOwnCpus(2), "no affinity published: not known to be bound apart");
    }

    @Test
    void ranksOfOneProcessShareAHostAndNoKnownAffinity() {
        HostPlacement p = HostPlacement.singleHost(3);
        assertEquals(1, p.topology().hosts());
        assertFalse(p.eachOnOwnCpus(0));
    }
}
