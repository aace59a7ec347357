package io.rdma4j.bench;

import io.rdma4j.bench.coll.BenchCollective;
import io.rdma4j.collectives.Algorithm;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PerfOptionsTest {
    private static final BenchCollective AR = BenchCollective.named("allreduce");

    @Test
    void readmeCommand() {
        PerfOptions o = PerfOptions.parse(new String[] {"--ranks", "4", "-b", "8", "-e", "64M", "-f", "4"}, AR);
        assertEquals(4, o.ranks);
        assertEquals(8, o.minBytes);
        assertEquals(64L << 20, o.maxBytes);
        assertEquals(4.0, o.factor);
        assertEquals(8L, o.sizes().getFirst());
        assertEquals(32L << 20, o.sizes().getLast());
        assertEquals(12, o.sizes().size());
        // --ranks is for the launcher only; the ranks get the rest verbatim
        assertEquals(List.of("-b", "8", "-e", "64M", "-f", "4"), o.forwarded);
    }

    @Test
    void everyNcclTestsOption() {
        PerfOptions o = PerfOptions.parse(new String[] {"-b8", "-e", "1M", "-f", "2", "-n", "7", "-w", "3", "-c", "0",
                "-d", "bfloat16", "-o", "max", "-a", "ring", "-t", "tcp", "--csv", "out.csv", "-p", "in",
                "--max-iter-bytes", "1G", "-R", "3"}, AR);
        assertEquals(8, o.minBytes);
        assertEquals(1 << 20, o.maxBytes);
        assertEquals(7, o.iterations);
        assertEquals(3, o.warmups);
        assertFalse(o.check);
        assertEquals(DataType.BF16, o.type);
        assertEquals(ReduceOp.MAX, o.op);
        assertEquals(Algorithm.RING, o.algorithm);
        assertEquals("tcp", o.transport);
        assertEquals(Path.of("out.csv"), o.csv);
        assertEquals(PerfOptions.Placement.IN, o.placement);
        assertFalse(o.runsOutOfPlace());
        assertTrue(o.runsInPlace());
        assertEquals(0, o.ranks);
        assertEquals(3, o.repeats);
        assertEquals(1L << 30, o.maxIterBytes);
    }

    /**
     * Refused before any rank starts: a factor that is no finite number (NaN stepped the sizes
     * linearly, unasked), and a CSV path that is a directory (rank 0 failed on it after the job ran).
     */
    @Test
    void aFactorThatIsNoNumberAndACsvDirectoryAreRefusedAtOnce(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        for (String f : new String[] {"NaN", "Infinity"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> PerfOptions.parse(new String[] {"-b", "8", "-e", "1M", "-f", f}, AR));
            assertTrue(e.getMessage().contains("finite number"), e.getMessage());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PerfOptions.parse(new String[] {"--csv", dir.toString()}, AR));
        assertTrue(e.getMessage().contains("is a directory"), e.getMessage());
        PerfOptions.parse(new String[] {"--csv", dir.resolve("results.csv").toString()}, AR);
    }

    /**
     * An option that would change nothing is refused rather than ignored: -i beside a factor
     * other than 1 (the factor won), a factor below 1 with -i (it stepped linearly), and -o, -r
     * and -a with values other than their defaults where the collective has no use for them.
     */
    @Test
    void optionsThatWouldChangeNothingAreRefused() {
        assertEquals(List.of(1L << 20, 2L << 20, 3L << 20),
                PerfOptions.parse(new String[] {"-b", "1M", "-e", "3M", "-f", "1", "-i", "1M"}, AR).sizes());
        assertEquals(List.of(1L << 20, 2L << 20, 3L << 20),
                PerfOptions.parse(new String[] {"-b", "1M", "-e", "3M", "-i", "1M"}, AR).sizes());
        for (String f : new String[] {"2", "0.5"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> PerfOptions.parse(new String[] {"-b", "1M", "-e", "4M", "-f", f, "-i", "1M"}, AR));
            assertTrue(e.getMessage().contains("-i steps linearly and goes with -f 1 (or no -f), not -f " + f),
                    e.getMessage());
        }
        String[][] refused = {
            {"-o", "max", "allgather", "-o applies to reductions; allgather reduces nothing"},
            {"-o", "min", "broadcast", "-o applies to reductions; broadcast reduces nothing"},
            {"-r", "1", "allreduce", "-r applies to broadcast; allreduce has no root"},
            {"-r", "1", "reducescatter", "-r applies to broadcast; reducescatter has no root"},
            {"-a", "ring", "allgather", "-a chooses the allreduce algorithm; allgather has one of its own"},
        };
        for (String[] r : refused) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> PerfOptions.parse(new String[] {"--op-kind", r[2], r[0], r[1]}, null), String.join(" ", r));
            assertEquals(r[3], e.getMessage());
        }
        // the defaults, as nccl-tests command lines pass them to every collective, go through
        PerfOptions.parse(new String[] {"--op-kind", "allgather", "-o", "sum", "-r", "0", "-a", "auto"}, null);
        assertEquals(ReduceOp.MAX, PerfOptions.parse(new String[] {"--op-kind", "reducescatter", "-o", "max"}, null).op);
    }

    @Test
    void interleaveIsParsedAndRefusedForOtherCollectives() {
        assertEquals(50, PerfOptions.parse(new String[] {"--interleave", "50"}, AR).interleaveRounds);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(
                new String[] {"--op-kind", "allgather", "--interleave", "50"}, null));
        assertTrue(e.getMessage().contains("allreduce only"), e.getMessage());
    }

    @Test
    void interleaveBuffersAreColdOrWarmAndNeedTheInterleavedPhase() {
        assertFalse(PerfOptions.parse(new String[] {"--interleave", "50"}, AR).interleaveWarmBuffers);
        assertTrue(PerfOptions.parse(new String[] {"--interleave", "50", "--interleave-buffers", "warm"}, AR)
                .interleaveWarmBuffers);
        assertFalse(PerfOptions.parse(new String[] {"--interleave", "50", "--interleave-buffers", "cold"}, AR)
                .interleaveWarmBuffers);
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(
                new String[] {"--interleave", "50", "--interleave-buffers", "hot"}, AR));
        assertTrue(bad.getMessage().contains("cold or warm"), bad.getMessage());
        IllegalArgumentException alone = assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(
                new String[] {"--interleave-buffers", "warm"}, AR));
        assertTrue(alone.getMessage().contains("needs --interleave"), alone.getMessage());
    }

    @Test
    void longFormsWithEquals() {
        PerfOptions o = PerfOptions.parse(new String[] {"--minbytes=1K", "--maxbytes=4K", "--datatype=half",
                "--op=avg", "--algo=auto"}, AR);
        assertEquals(List.of(1024L, 2048L, 4096L), o.sizes()); // no -f: doubling
        assertEquals(DataType.F16, o.type);
        assertEquals(ReduceOp.AVG, o.op);
        assertNull(o.algorithm);
    }

    @Test
    void iterationCapLowersOnlyLargeSizes() {
        PerfOptions o = PerfOptions.parse(new String[] {"-n", "20", "-w", "5", "--max-iter-bytes", "256M"}, AR);
        assertEquals(20, o.iterationsAt(1 << 20));       // 20 MiB in all: below the cap
        assertEquals(8, o.iterationsAt(32L << 20));       // 256M / 32M
        assertEquals(1, o.iterationsAt(512L << 20));      // never fewer than 1
        assertEquals(5, o.warmupsAt(32L << 20));          // 5 x 32M fits
        assertEquals(1, o.warmupsAt(256L << 20));
    }

    @Test
    void collectivePerfNeedsAKindAndBroadcastHasNoOutOfPlace() {
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(new String[] {"-b", "8"}, null));
        PerfOptions o = PerfOptions.parse(new String[] {"--op-kind", "broadcast", "-r", "1"}, null);
        assertEquals("broadcast", o.collective.name());
        assertEquals(1, o.root);
        assertFalse(o.runsOutOfPlace());
        assertTrue(o.runsInPlace());
        assertThrows(IllegalArgumentException.class,
                () -> PerfOptions.parse(new String[] {"--op-kind", "allgather"}, AR));
    }

    @Test
    void badInputIsNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PerfOptions.parse(new String[] {"-d", "float8"}, AR));
        assertTrue(e.getMessage().contains("float8"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(new String[] {"-n"}, AR));
        assertTrue(e.getMessage().contains("-n"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(new String[] {"-n", "0"}, AR));
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(new String[] {"-t", "ib"}, AR));
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(new String[] {"--bogus", "1"}, AR));
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(new String[] {"-b", "1M", "-e", "8"}, AR));
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(new String[] {"-f", "1"}, AR));
    }
}
