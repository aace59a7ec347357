package io.rdma4j.bench.compare;

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
 * <p>The file has one line per turn: {@code pass ranks system before_ns after_ns}, tab-separated.
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

    record Turn(int pass, int ranks, String system, double beforeNs, double afterNs) {
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
                if (f.length != 5) {
                    throw new IllegalArgumentException(file + ": expected 'pass ranks system before_ns after_ns', got '"
                            + line + "'");
                }
                turns.add(new Turn(Integer.parseInt(f[0]), Integer.parseInt(f[1]), f[2], Double.parseDouble(f[3]),
                        Double.parseDouble(f[4])));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
        return new LinePhases(turns);
    }

    List<Turn> turns() {
        return turns;
    }

    /** The turn of {@code system} (rdma4j, or any other name for the peer) in pass {@code pass} (from 1). */
    Optional<Turn> turn(int pass, int ranks, boolean ours) {
        return turns.stream().filter(t -> t.pass() == pass && t.ranks() == ranks
                && t.system().equals("rdma4j") == ours).findFirst();
    }

    /** Whether both turns of the pass ran at one level, neither changing during its turn. */
    boolean alike(int pass, int ranks) {
        Optional<Turn> ours = turn(pass, ranks, true);
        Optional<Turn> peer = turn(pass, ranks, false);
        return ours.isPresent() && peer.isPresent() && ours.get().level() != Level.CHANGED
                && ours.get().level() == peer.get().level();
    }
}
