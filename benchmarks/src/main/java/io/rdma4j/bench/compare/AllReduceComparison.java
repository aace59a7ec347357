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

import static io.rdma4j.bench.compare.Reports.geomean;
import static io.rdma4j.bench.compare.Reports.max;
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
 * <pre>java ... AllReduceComparison --md out.md --png out.png [--command "..."] file.csv...</pre>
 */
public final class AllReduceComparison {
    /** Sizes from which the target is "at least equal busbw". */
    static final long BANDWIDTH_FROM = 1L << 20;
    /** Sizes up to which the target is "latency within 1.5x". */
    static final long LATENCY_UP_TO = 4096;
    static final double LATENCY_TARGET = 1.5;

    /**
     * One system's out-of-place results for one rank count: each pass by size, and per size the
     * fastest pass's row with the wrong elements of every pass.
     */
    record Curve(String system, int ranks, List<TreeMap<Long, Map<String, String>>> passes,
                 TreeMap<Long, Map<String, String>> bySize) {
        Curve(String system, int ranks, List<TreeMap<Long, Map<String, String>>> passes) {
            this(system, ranks, passes, best(passes));
        }

        private static TreeMap<Long, Map<String, String>> best(List<TreeMap<Long, Map<String, String>>> passes) {
            TreeMap<Long, Map<String, String>> best = new TreeMap<>();
            TreeMap<Long, Long> wrong = new TreeMap<>();
            for (TreeMap<Long, Map<String, String>> pass : passes) {
                for (Map.Entry<Long, Map<String, String>> e : pass.entrySet()) {
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

    /** How one system's results compared with the peer's against the two targets. */
    record Outcome(List<Double> bwRatios, int bwMet, List<Double> latRatios, int latMet) {
        static Outcome of(TreeMap<Long, Map<String, String>> ours, TreeMap<Long, Map<String, String>> peer) {
            List<Double> bw = new ArrayList<>();
            List<Double> lat = new ArrayList<>();
            int bwMet = 0;
            int latMet = 0;
            for (Map.Entry<Long, Map<String, String>> e : ours.entrySet()) {
                Map<String, String> p = peer.get(e.getKey());
                if (p == null) {
                    continue;
                }
                long size = e.getKey();
                double pb = num(p, "busbw_gbs");
                if (size >= BANDWIDTH_FROM && pb > 0) {
                    double r = num(e.getValue(), "busbw_gbs") / pb;
                    bw.add(r);
                    bwMet += r >= 1.0 ? 1 : 0;
                }
                if (size >= 8 && size <= LATENCY_UP_TO) {
                    double r = num(e.getValue(), "time_us") / num(p, "time_us");
                    lat.add(r);
                    latMet += r <= LATENCY_TARGET ? 1 : 0;
                }
            }
            return new Outcome(bw, bwMet, lat, latMet);
        }

        boolean allMet() {
            return bwMet == bwRatios.size() && latMet == latRatios.size();
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
        List<Path> inputs = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--md" -> md = Path.of(args[++i]);
                case "--png" -> png = Path.of(args[++i]);
                case "--command" -> command = args[++i];
                case "--peer-name" -> peerName = args[++i];
                case "--transport" -> transport = args[++i];
                default -> inputs.add(Path.of(args[i]));
            }
        }
        if (md == null || png == null || inputs.isEmpty()) {
            System.err.println("usage: AllReduceComparison --md FILE --png FILE [--command TEXT] [--peer-name NAME] "
                    + "[--transport NAME] CSV...");
            System.exit(2);
        }
        List<Curve> curves = load(inputs);
        write(md, markdown(curves, command, peerName, transport, png.getFileName().toString()));
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
     */
    static String markdown(List<Curve> curves, String command, String peerName, String transport, String pngName) {
        StringBuilder b = new StringBuilder();
        b.append("# rdma4j allreduce vs ").append(peerName).append(" MPI_Allreduce\n\n");
        b.append("Machine: ").append(MachineInfo.describe()).append(".\n\n");
        int passCount = curves.stream().mapToInt(c -> c.passes().size()).max().orElse(0);
        b.append("Regenerate with `").append(command).append("` (one run: both systems, same sizes and rank counts");
        if (passCount > 1) {
            b.append("; ").append(passCount).append(" passes, the two systems taking turns, and each row shows each ")
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
            b.append("| size | rdma4j time (us) | ").append(peerName).append(" time (us) | time ratio | rdma4j busbw (GB/s) | ")
                    .append(peerName).append(" busbw (GB/s) | busbw ratio | rdma4j algo | #wrong (rdma4j / peer) |\n");
            b.append("|---:|---:|---:|---:|---:|---:|---:|:---|---:|\n");
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
                b.append(String.format(Locale.ROOT, "| %s | %.2f | %.2f | %.2f | %.3f | %.3f | %s | %s | %s |%n",
                        ByteSizes.format(e.getKey()), ot, pt, ot / pt, ob, pb,
                        pb > 0 ? String.format(Locale.ROOT, "%.2f", ob / pb) : "-", o.get("algo"),
                        o.get("wrong") + " / " + p.get("wrong")));
            }
            Outcome best = Outcome.of(ours.bySize(), peer.bySize());
            b.append('\n');
            b.append(String.format(Locale.ROOT,
                    "From 1M up, busbw ratio rdma4j / %s: geometric mean %.2f, min %.2f; at least equal at %d of %d sizes.%n%n",
                    peerName, geomean(best.bwRatios()), min(best.bwRatios()), best.bwMet(), best.bwRatios().size()));
            b.append(String.format(Locale.ROOT,
                    "8 B - 4K, time ratio rdma4j / %s: geometric mean %.2f, max %.2f; within %.1fx at %d of %d sizes.%n",
                    peerName, geomean(best.latRatios()), max(best.latRatios()), LATENCY_TARGET, best.latMet(),
                    best.latRatios().size()));
            int passes = Math.min(ours.passes().size(), peer.passes().size());
            if (passes > 1) {
                b.append("\nEach pass on its own (rdma4j's pass k against ").append(peerName).append("'s pass k):\n\n");
                for (int k = 0; k < passes; k++) {
                    Outcome o = Outcome.of(ours.passes().get(k), peer.passes().get(k));
                    b.append(String.format(Locale.ROOT,
                            "- pass %d: busbw from 1M at least equal at %d of %d sizes (min %.2f), 8 B - 4K within "
                                    + "%.1fx at %d of %d (max %.2f)%s%n", k + 1, o.bwMet(), o.bwRatios().size(),
                            min(o.bwRatios()), LATENCY_TARGET, o.latMet(), o.latRatios().size(), max(o.latRatios()),
                            o.allMet() ? ": both targets met" : ""));
                }
            }
        }
        return b.toString();
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
