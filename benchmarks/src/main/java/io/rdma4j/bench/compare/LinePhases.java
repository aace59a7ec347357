package io.rdma4j.bench.compare;

import io.rdma4j.bench.ByteSizes;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The cache-line latency between two CPUs that compare-mpi measures ({@code benchmarks/c/core_latency.c})
 * right before and right after each system's turn, and what it says about the turn. On a VM that
 * latency has two levels, and it moves between them when the hypervisor moves the vCPUs (on the
 * 2-core EPYC VM these benchmarks ran on: about 50 ns or about 210-240 ns, for tens of seconds
 * at a time). Every shared-memory transfer pays it, so a turn at the high level runs up to 2-4x
 * slower at small sizes, whichever system runs: two turns of one pass compare the systems only
 * when both ran at the same level. To see the levels of another machine, run {@code core_latency
 * 0.3 0 1} a few times a minute apart.
 *
 * <p>The file has one line per turn: {@code pass ranks system before_ns after_ns [from_bytes to_bytes]},
 * tab-separated; the sizes say which range of the pass's sweep the turn ran (compare-mpi -S), and
 * without them the turn ran the whole sweep.
 */
final class LinePhases {
    /** Between the two levels: a turn is "fast" when both readings are under it, "slow" when both are over. */
    static final double LEVEL_BOUNDARY_NS = 100;

    enum Level {
        FAST("fast"), SLOW("slow"), CHANGED("changed during the turn");

        final String label;

        Level(String label) {
            this.label = label;
        }
    }

    /** The sizes of a turn that ran the whole sweep (a line without them). */
    private static final long WHOLE_FROM = 0;
    private static final long WHOLE_TO = Long.MAX_VALUE;

    record Turn(int pass, int ranks, String system, double beforeNs, double afterNs, long fromBytes, long toBytes) {
        boolean covers(long size) {
            return size >= fromBytes && size <= toBytes;
        }

        boolean wholeSweep() {
            return fromBytes == WHOLE_FROM && toBytes == WHOLE_TO;
        }

        /** "8-1K": the sizes the turn ran. */
        String range() {
            return ByteSizes.format(fromBytes) + "-" + ByteSizes.format(toBytes);
        }

        Level level() {
            boolean fastBefore = beforeNs < LEVEL_BOUNDARY_NS;
            boolean fastAfter = afterNs < LEVEL_BOUNDARY_NS;
            if (fastBefore != fastAfter) {
                return Level.CHANGED;
            }
            return fastBefore ? Level.FAST : Level.SLOW;
        }

        String describe() {
            return String.format(Locale.ROOT, "%.0f -> %.0f ns (%s)", beforeNs, afterNs, level().label);
        }
    }

    private final List<Turn> turns;

    LinePhases(List<Turn> turns) {
        this.turns = List.copyOf(turns);
    }

    static LinePhases read(Path file) {
        List<Turn> turns = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(file)) {
                if (line.isBlank()) {
                    continue;
                }
                String[] f = line.split("\t");
                if (f.length != 5 && f.length != 7) {
                    throw new IllegalArgumentException(file + ": expected 'pass ranks system before_ns after_ns "
                            + "[from_bytes to_bytes]', got '" + line + "'");
                }
                boolean whole = f.length == 5;
                turns.add(new Turn(Integer.parseInt(f[0]), Integer.parseInt(f[1]), f[2], Double.parseDouble(f[3]),
                        Double.parseDouble(f[4]), whole ? WHOLE_FROM : Long.parseLong(f[5]),
                        whole ? WHOLE_TO : Long.parseLong(f[6])));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
        return new LinePhases(turns);
    }

    List<Turn> turns() {
        return turns;
    }

    /** The turns of {@code system} (rdma4j, or any other name for the peer) in pass {@code pass} (from 1), in order. */
    List<Turn> turns(int pass, int ranks, boolean ours) {
        return turns.stream().filter(t -> t.pass() == pass && t.ranks() == ranks
                && t.system().equals("rdma4j") == ours).toList();
    }

    /** The turn of {@code system} in pass {@code pass} that ran {@code size}. */
    Optional<Turn> turn(int pass, int ranks, boolean ours, long size) {
        return turns(pass, ranks, ours).stream().filter(t -> t.covers(size)).findFirst();
    }

    /** Whether both turns of the pass that ran {@code size} ran at one level, neither changing during its turn. */
    boolean alike(int pass, int ranks, long size) {
        Optional<Turn> ours = turn(pass, ranks, true, size);
        Optional<Turn> peer = turn(pass, ranks, false, size);
        return ours.isPresent() && peer.isPresent() && ours.get().level() != Level.CHANGED
                && ours.get().level() == peer.get().level();
    }

    /** Whether every pair of turns of the pass ran alike (and there was one). */
    boolean alike(int pass, int ranks) {
        List<Turn> ours = turns(pass, ranks, true);
        return !ours.isEmpty() && ours.stream().allMatch(t -> alike(pass, ranks, t.fromBytes()));
    }

    /**
     * How the pass's turns ran: for a whole-sweep pass "rdma4j A, PEER B", otherwise per range
     * "8-1K: rdma4j A, PEER B", where A and B are the turns' readings ({@link Turn#describe}).
     */
    String describe(int pass, int ranks, String peerName) {
        List<String> parts = new ArrayList<>();
        for (Turn t : turns(pass, ranks, true)) {
            String peer = turn(pass, ranks, false, t.fromBytes()).map(Turn::describe).orElse("not measured");
            parts.add((t.wholeSweep() ? "" : t.range() + ": ") + "rdma4j " + t.describe() + ", " + peerName + " " + peer
                    + (t.wholeSweep() || alike(pass, ranks, t.fromBytes()) ? "" : " (not alike)"));
        }
        return parts.isEmpty() ? "rdma4j not measured" : String.join("; ", parts);
    }
}
