package io.rdma4j.bench.compare;

import io.rdma4j.bench.ByteSizes;
import io.rdma4j.bench.plot.ComparisonPlot;
import io.rdma4j.bench.plot.Series;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BiPredicate;

import static io.rdma4j.bench.compare.Reports.geomean;
import static io.rdma4j.bench.compare.Reports.min;
import static io.rdma4j.bench.compare.Reports.num;
import static io.rdma4j.bench.compare.Reports.write;

/**
 * Turns the CSVs of allreduce-perf and of our MPI_Allreduce benchmark (same sizes, same rank
 * counts, one run) into the comparison table (markdown: both busbw and their ratio, both
 * times for the latency-bound sizes) and the plot (busbw and time vs size, both systems).
 *
 * <p>Several CSVs of one system and rank count are passes of one run (in the order given, the
 * two systems' passes alternating in time): the table and the plot show, per size and system,
 * the fastest pass (the same rule for both, so that a stretch of seconds in which the shared
 * machine was slow decides neither), the wrong elements of all passes, and below the table how
 * each pass on its own compared.
 *
 * <p>With {@code --latencies} (the cache-line latency before and after each turn, see
 * {@link LinePhases}) each pass says at which level each system's turn ran, and the table gets
 * a second ratio: the fastest pass of each system among the passes whose two turns ran at the
 * same level, the comparison the host's levels do not decide.
 *
 * <pre>java ... AllReduceComparison --md out.md --png out.png [--command "..."] [--latencies FILE] file.csv...</pre>
 */
public final class AllReduceComparison {
    /** Sizes from which the busbw ratio is summed up (where the bandwidth, not the latency, decides). */
    static final long BANDWIDTH_FROM = 1L << 20;
    /** rdma4j's time over the peer's, at most, at every size of the best-of-passes table. */
    static final double TIME_TARGET = 1.0;
    /** rdma4j's time over the peer's, at most, at every size of any single pass. */
    static final double PASS_LIMIT = 1.3;

    /**
     * One system's out-of-place results for one rank count: each pass by size, and per size the
     * fastest pass's row with the wrong elements of every pass.
     */
    record Curve(String system, int ranks, List<TreeMap<Long, Map<String, String>>> passes,
                 TreeMap<Long, Map<String, String>> bySize) {
        Curve(String system, int ranks, List<TreeMap<Long, Map<String, String>>> passes) {
            this(system, ranks, passes, best(passes));
        }

        static TreeMap<Long, Map<String, String>> best(List<TreeMap<Long, Map<String, String>>> passes) {
            return best(passes, (pass, size) -> true);
        }

        /** The same over the rows {@code keep} takes (pass from 1, size); a size no pass kept has no row. */
        static TreeMap<Long, Map<String, String>> best(List<TreeMap<Long, Map<String, String>>> passes,
                                                       BiPredicate<Integer, Long> keep) {
            TreeMap<Long, Map<String, String>> best = new TreeMap<>();
            TreeMap<Long, Long> wrong = new TreeMap<>();
            for (int k = 0; k < passes.size(); k++) {
                for (Map.Entry<Long, Map<String, String>> e : passes.get(k).entrySet()) {
                    if (!keep.test(k + 1, e.getKey())) {
                        continue;
                    }
                    best.merge(e.getKey(), e.getValue(), (a, b) -> num(b, "time_us") < num(a, "time_us") ? b : a);
                    // -1: not checked; any checked pass counts
                    wrong.merge(e.getKey(), (long) num(e.getValue(), "wrong"), (a, b) -> a < 0 ? b : b < 0 ? a : a + b);
                }
            }
            best.replaceAll((size, row) -> {
                Map<String, String> r = new TreeMap<>(row);
                r.put("wrong", Long.toString(wrong.get(size)));
                return r;
            });
            return best;
        }
    }

    /** rdma4j's time over the peer's at every size both have, and the busbw ratios from {@link #BANDWIDTH_FROM}. */
    record Outcome(TreeMap<Long, Double> timeRatios, List<Double> bwRatios) {
        static Outcome of(TreeMap<Long, Map<String, String>> ours, TreeMap<Long, Map<String, String>> peer) {
            TreeMap<Long, Double> time = new TreeMap<>();
            List<Double> bw = new ArrayList<>();
            for (Map.Entry<Long, Map<String, String>> e : ours.entrySet()) {
                Map<String, String> p = peer.get(e.getKey());
                if (p == null) {
                    continue;
                }
                time.put(e.getKey(), num(e.getValue(), "time_us") / num(p, "time_us"));
                double pb = num(p, "busbw_gbs");
                if (e.getKey() >= BANDWIDTH_FROM && pb > 0) {
                    bw.add(num(e.getValue(), "busbw_gbs") / pb);
                }
            }
            return new Outcome(time, bw);
        }

        /** "max R (at SIZE)": the largest time ratio and its size. */
        String worst() {
            Map.Entry<Long, Double> w = timeRatios.entrySet().stream().max(Map.Entry.comparingByValue()).orElse(null);
            return w == null ? "no sizes" : String.format(Locale.ROOT, "max %.2f (at %s)", w.getValue(),
                    ByteSizes.format(w.getKey()));
        }

        /** "over 1.0x at N of M sizes": with the sizes when there are a few. */
        String summary(double limit) {
            List<String> sizes = new ArrayList<>();
            timeRatios.forEach((size, r) -> {
                if (r > limit) {
                    sizes.add(ByteSizes.format(size));
                }
            });
            String s = String.format(Locale.ROOT, "over %.1fx at %d of %d sizes", limit, sizes.size(), timeRatios.size());
            return sizes.isEmpty() || sizes.size() > 6 ? s : s + " (" + String.join(", ", sizes) + ")";
        }
    }

    private AllReduceComparison() {
    }

    public static void main(String[] args) {
        Path md = null;
        Path png = null;
        String command = "benchmarks/scripts/compare-mpi";
        String peerName = "Open MPI";
        String transport = null;
        Path latencies = null;
        List<Path> inputs = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--md" -> md = Path.of(args[++i]);
                case "--png" -> png = Path.of(args[++i]);
                case "--command" -> command = args[++i];
                case "--peer-name" -> peerName = args[++i];
                case "--transport" -> transport = args[++i];
                case "--latencies" -> latencies = Path.of(args[++i]);
                default -> inputs.add(Path.of(args[i]));
            }
        }
        if (md == null || png == null || inputs.isEmpty()) {
            System.err.println("usage: AllReduceComparison --md FILE --png FILE [--command TEXT] [--peer-name NAME] "
                    + "[--transport NAME] [--latencies FILE] CSV...");
            System.exit(2);
        }
        List<Curve> curves = load(inputs);
        LinePhases phases = latencies == null ? null : LinePhases.read(latencies);
        write(md, markdown(curves, command, peerName, transport, png.getFileName().toString(), phases));
        plot(png, curves, peerName);
        System.out.println("wrote " + md + " and " + png);
    }

    static List<Curve> load(List<Path> inputs) {
        Map<String, List<TreeMap<Long, Map<String, String>>>> passes = new TreeMap<>();
        for (Path p : inputs) {
            Map<String, TreeMap<Long, Map<String, String>>> inFile = new TreeMap<>();
            for (Map<String, String> row : CsvTable.read(p).rows()) {
                if (!"allreduce".equals(row.get("collective")) || !"out".equals(row.get("placement"))) {
                    continue;
                }
                inFile.computeIfAbsent(row.get("system") + "/" + row.get("ranks"), k -> new TreeMap<>())
                        .put(Long.parseLong(row.get("size_bytes")), row);
            }
            inFile.forEach((key, pass) -> passes.computeIfAbsent(key, k -> new ArrayList<>()).add(pass));
        }
        List<Curve> curves = new ArrayList<>();
        passes.forEach((key, ps) -> curves.add(new Curve(key.substring(0, key.lastIndexOf('/')),
                Integer.parseInt(key.substring(key.lastIndexOf('/') + 1)), ps)));
        return curves;
    }

    /**
     * @param transport the transport rdma4j's ranks were told to use (allreduce-perf -t), or null
     *                  for the machine's default
     * @param phases    the line latency around each turn, or null when it was not measured
     */
    static String markdown(List<Curve> curves, String command, String peerName, String transport, String pngName,
                           LinePhases phases) {
        StringBuilder b = new StringBuilder();
        b.append("# rdma4j allreduce vs ").append(peerName).append(" MPI_Allreduce\n\n");
        b.append("Machine: ").append(MachineInfo.describe()).append(".\n\n");
        int passCount = curves.stream().mapToInt(c -> c.passes().size()).max().orElse(0);
        b.append("Regenerate with `").append(command).append("` (one run: both systems, same sizes and rank counts");
        if (passCount > 1) {
            boolean ranges = phases != null && phases.turns().stream().anyMatch(t -> !t.wholeSweep());
            b.append("; ").append(passCount).append(" passes, the two systems taking turns")
                    .append(ranges ? " over each size range of a pass, the first to run alternating" : "")
                    .append(", and each row shows each ")
                    .append("system's fastest pass at that size, the same rule for both; how each pass compared ")
                    .append("on its own is listed under each table");
        }
        b.append(").\n");
        b.append("Both sides: float sum, out-of-place, time per call averaged over the ranks after warm-ups, ");
        b.append("busbw as nccl-tests defines it (size / time x 2(n-1)/n), results checked (`#wrong` must be 0). ");
        b.append("rdma4j: `bin/rdma4j allreduce-perf`, ranks as separate JVMs on ")
                .append(transport == null ? "the default transport of this machine" : "the " + transport + " transport")
                .append(", algorithm chosen by the policy. ").append(peerName);
        b.append(": `benchmarks/c/mpi_allreduce_bench.c` under `mpirun`, its default collective component. ");
        b.append("Plot: `").append(pngName).append("`; raw CSVs: `raw/`.\n");
        TreeSet<Integer> rankCounts = new TreeSet<>();
        for (Curve c : curves) {
            rankCounts.add(c.ranks());
        }
        for (int n : rankCounts) {
            Curve ours = find(curves, "rdma4j", n);
            Curve peer = curves.stream().filter(c -> c.ranks() == n && !c.system().equals("rdma4j")).findFirst().orElse(null);
            b.append("\n## ").append(n).append(" ranks\n\n");
            if (ours == null || peer == null) {
                b.append("(missing: ").append(ours == null ? "rdma4j" : peerName).append(" results for ").append(n)
                        .append(" ranks)\n");
                continue;
            }
            int passes = Math.min(ours.passes().size(), peer.passes().size());
            Outcome alikeBest = null;
            if (phases != null) {
                BiPredicate<Integer, Long> alikeTurns = (k, size) -> phases.alike(k, n, size);
                alikeBest = Outcome.of(Curve.best(ours.passes(), alikeTurns), Curve.best(peer.passes(), alikeTurns));
                if (alikeBest.timeRatios().isEmpty()) {
                    alikeBest = null;
                }
            }
            b.append("| size | rdma4j time (us) | ").append(peerName).append(" time (us) | time ratio | ");
            if (phases != null) {
                b.append("time ratio, passes alike | ");
            }
            b.append("rdma4j busbw (GB/s) | ").append(peerName)
                    .append(" busbw (GB/s) | busbw ratio | rdma4j algo | #wrong (rdma4j / peer) |\n");
            b.append(phases != null ? "|---:|---:|---:|---:|---:|---:|---:|---:|:---|---:|\n"
                    : "|---:|---:|---:|---:|---:|---:|---:|:---|---:|\n");
            for (Map.Entry<Long, Map<String, String>> e : ours.bySize().entrySet()) {
                Map<String, String> p = peer.bySize().get(e.getKey());
                if (p == null) {
                    continue;
                }
                Map<String, String> o = e.getValue();
                double ot = num(o, "time_us");
                double pt = num(p, "time_us");
                double ob = num(o, "busbw_gbs");
                double pb = num(p, "busbw_gbs");
                b.append(String.format(Locale.ROOT, "| %s | %.2f | %.2f | %.2f | ", ByteSizes.format(e.getKey()), ot, pt,
                        ot / pt));
                if (phases != null) {
                    Double r = alikeBest == null ? null : alikeBest.timeRatios().get(e.getKey());
                    b.append(r == null ? "-" : String.format(Locale.ROOT, "%.2f", r)).append(" | ");
                }
                b.append(String.format(Locale.ROOT, "%.3f | %.3f | %s | %s | %s |%n", ob, pb,
                        pb > 0 ? String.format(Locale.ROOT, "%.2f", ob / pb) : "-", o.get("algo"),
                        o.get("wrong") + " / " + p.get("wrong")));
            }
            Outcome best = Outcome.of(ours.bySize(), peer.bySize());
            b.append('\n');
            b.append(String.format(Locale.ROOT, "Time ratio rdma4j / %s%s: geometric mean %.2f, %s; %s.%n", peerName,
                    passes > 1 ? ", fastest passes" : "", geomean(List.copyOf(best.timeRatios().values())), best.worst(),
                    best.summary(TIME_TARGET)));
            if (phases != null) {
                b.append('\n').append(alikeSummary(phases, n, passes, alikeBest));
            }
            if (!best.bwRatios().isEmpty()) {
                b.append(String.format(Locale.ROOT, "%nFrom 1M up, busbw ratio rdma4j / %s: geometric mean %.2f, min %.2f.%n",
                        peerName, geomean(best.bwRatios()), min(best.bwRatios())));
            }
            if (passes > 1) {
                b.append("\nEach pass on its own (rdma4j's pass k against ").append(peerName).append("'s pass k):\n\n");
                for (int k = 0; k < passes; k++) {
                    Outcome o = Outcome.of(ours.passes().get(k), peer.passes().get(k));
                    b.append(String.format(Locale.ROOT, "- pass %d: time ratio %s; %s", k + 1, o.worst(),
                            o.summary(PASS_LIMIT)));
                    if (phases != null) {
                        b.append("; line latency: ").append(phases.describe(k + 1, n, peerName));
                        if (!phases.alike(k + 1, n)) {
                            b.append(wholeSweeps(phases, k + 1, n)
                                    ? ": not alike, so this pass compares the host's levels as much as the systems"
                                    : ": where not alike, this pass compares the host's levels as much as the systems");
                        }
                    }
                    b.append('\n');
                }
            }
        }
        if (phases != null && !phases.turns().isEmpty()) {
            b.append("\n## Cache-line latency between two CPUs around each turn\n\n");
            b.append("One-way, measured for 0.3 s by `benchmarks/c/core_latency.c` right before and right after each "
                    + "system's turn. Every shared-memory transfer pays it, both systems'; on a VM it moves between two "
                    + "levels when the host moves the vCPUs, and a turn at the higher one runs up to 2-4x slower at "
                    + "small sizes. A turn counts as fast or slow when both readings are on one side of ");
            b.append(String.format(Locale.ROOT, "%.0f ns.%n%n", LinePhases.LEVEL_BOUNDARY_NS));
            for (LinePhases.Turn t : phases.turns()) {
                b.append(String.format(Locale.ROOT, "- pass %d, %d ranks, %s%s: %s%n", t.pass(), t.ranks(),
                        t.wholeSweep() ? "" : t.range() + ", ", t.system().equals("rdma4j") ? "rdma4j" : peerName,
                        t.describe()));
            }
        }
        return b.toString();
    }

    /**
     * The paragraph on the "passes alike" ratio: which turns it took (whole passes, or pairs of
     * turns over one size range each) and how it came out.
     */
    private static String alikeSummary(LinePhases phases, int ranks, int passes, Outcome alikeBest) {
        List<Integer> alikePasses = new ArrayList<>();
        int pairs = 0;
        int alikePairs = 0;
        boolean whole = true;
        for (int k = 1; k <= passes; k++) {
            if (phases.alike(k, ranks)) {
                alikePasses.add(k);
            }
            whole &= wholeSweeps(phases, k, ranks);
            for (LinePhases.Turn t : phases.turns(k, ranks, true)) {
                pairs++;
                alikePairs += phases.alike(k, ranks, t.fromBytes()) ? 1 : 0;
            }
        }
        if (alikeBest == null) {
            return String.format(Locale.ROOT, "No pass had both turns at one line latency.%n");
        }
        if (alikePasses.size() == passes) {
            return String.format(Locale.ROOT, "Every pass had both turns at one line latency.%n");
        }
        String which = whole
                ? "passes whose two turns ran at one line latency (" + passList(alikePasses) + ")"
                : String.format(Locale.ROOT, "pairs of turns that ran at one line latency (%d of %d; at each size, "
                + "the passes whose two turns of that size did)", alikePairs, pairs);
        return String.format(Locale.ROOT, "The same over the %s: geometric mean %.2f, %s; %s.%n", which,
                geomean(List.copyOf(alikeBest.timeRatios().values())), alikeBest.worst(),
                alikeBest.summary(TIME_TARGET));
    }

    private static boolean wholeSweeps(LinePhases phases, int pass, int ranks) {
        return phases.turns(pass, ranks, true).stream().allMatch(LinePhases.Turn::wholeSweep);
    }

    private static String passList(List<Integer> passes) {
        return (passes.size() == 1 ? "pass " : "passes ") + String.join(", ", passes.stream().map(String::valueOf).toList());
    }

    static void plot(Path png, List<Curve> curves, String peerName) {
        List<Series> bw = new ArrayList<>();
        List<Series> time = new ArrayList<>();
        TreeSet<Integer> rankCounts = new TreeSet<>();
        for (Curve c : curves) {
            rankCounts.add(c.ranks());
        }
        List<Integer> order = new ArrayList<>(rankCounts);
        for (Curve c : curves) {
            boolean ours = c.system().equals("rdma4j");
            String name = (ours ? "rdma4j" : peerName) + ", " + c.ranks() + " ranks";
            List<double[]> b = new ArrayList<>();
            List<double[]> t = new ArrayList<>();
            for (Map.Entry<Long, Map<String, String>> e : c.bySize().entrySet()) {
                b.add(new double[] {e.getKey(), num(e.getValue(), "busbw_gbs")});
                t.add(new double[] {e.getKey(), num(e.getValue(), "time_us")});
            }
            int colour = order.indexOf(c.ranks());
            bw.add(new Series(name, b, colour, !ours));
            time.add(new Series(name, t, colour, !ours));
        }
        ComparisonPlot.write(png, "Allreduce: rdma4j vs " + peerName + " (float sum, out-of-place)",
                "busbw per nccl-tests; " + MachineInfo.describe(),
                List.of(new ComparisonPlot.Panel("busbw (GB/s)", false, bw),
                        new ComparisonPlot.Panel("time per call (us, log)", true, time)), 1200, 900);
    }

    private static Curve find(List<Curve> curves, String system, int ranks) {
        return curves.stream().filter(c -> c.system().equals(system) && c.ranks() == ranks).findFirst().orElse(null);
    }
}
