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
 * <pre>java ... AllReduceComparison --md out.md --png out.png [--command "..."] file.csv...</pre>
 */
public final class AllReduceComparison {
    /** Sizes from which the target is "at least equal busbw". */
    static final long BANDWIDTH_FROM = 1L << 20;
    /** Sizes up to which the target is "latency within 1.5x". */
    static final long LATENCY_UP_TO = 4096;
    static final double LATENCY_TARGET = 1.5;

    /** One system's out-of-place results for one rank count, by size. */
    record Curve(String system, int ranks, TreeMap<Long, Map<String, String>> bySize) {
    }

    private AllReduceComparison() {
    }

    public static void main(String[] args) {
        Path md = null;
        Path png = null;
        String command = "benchmarks/scripts/compare-mpi";
        String peerName = "Open MPI";
        List<Path> inputs = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--md" -> md = Path.of(args[++i]);
                case "--png" -> png = Path.of(args[++i]);
                case "--command" -> command = args[++i];
                case "--peer-name" -> peerName = args[++i];
                default -> inputs.add(Path.of(args[i]));
            }
        }
        if (md == null || png == null || inputs.isEmpty()) {
            System.err.println("usage: AllReduceComparison --md FILE --png FILE [--command TEXT] [--peer-name NAME] CSV...");
            System.exit(2);
        }
        List<Curve> curves = load(inputs);
        write(md, markdown(curves, command, peerName));
        plot(png, curves, peerName);
        System.out.println("wrote " + md + " and " + png);
    }

    static List<Curve> load(List<Path> inputs) {
        Map<String, Curve> byKey = new TreeMap<>();
        for (Path p : inputs) {
            for (Map<String, String> row : CsvTable.read(p).rows()) {
                if (!"allreduce".equals(row.get("collective")) || !"out".equals(row.get("placement"))) {
                    continue;
                }
                int ranks = Integer.parseInt(row.get("ranks"));
                String system = row.get("system");
                Curve c = byKey.computeIfAbsent(system + "/" + ranks, k -> new Curve(system, ranks, new TreeMap<>()));
                c.bySize().put(Long.parseLong(row.get("size_bytes")), row);
            }
        }
        return new ArrayList<>(byKey.values());
    }

    static String markdown(List<Curve> curves, String command, String peerName) {
        StringBuilder b = new StringBuilder();
        b.append("# rdma4j allreduce vs ").append(peerName).append(" MPI_Allreduce\n\n");
        b.append("Machine: ").append(MachineInfo.describe()).append(".\n\n");
        b.append("Regenerate with `").append(command).append("` (one run: both systems, same sizes and rank counts).\n");
        b.append("Both sides: float sum, out-of-place, time per call averaged over the ranks after warm-ups, ");
        b.append("busbw as nccl-tests defines it (size / time x 2(n-1)/n), results checked (`#wrong` must be 0). ");
        b.append("rdma4j: `bin/rdma4j allreduce-perf`, ranks as separate JVMs on the default transport ");
        b.append("of this machine, algorithm chosen by the policy. ").append(peerName);
        b.append(": `benchmarks/c/mpi_allreduce_bench.c` under `mpirun`, its default collective component. ");
        b.append("Plot: `allreduce-vs-openmpi.png`; raw CSVs: `raw/`.\n");
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
            List<Double> bwRatios = new ArrayList<>();
            List<Double> latRatios = new ArrayList<>();
            int bwMet = 0;
            int latMet = 0;
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
                double timeRatio = ot / pt;
                double bwRatio = pb > 0 ? ob / pb : Double.NaN;
                long size = e.getKey();
                if (size >= BANDWIDTH_FROM && !Double.isNaN(bwRatio)) {
                    bwRatios.add(bwRatio);
                    bwMet += bwRatio >= 1.0 ? 1 : 0;
                }
                if (size >= 8 && size <= LATENCY_UP_TO) {
                    latRatios.add(timeRatio);
                    latMet += timeRatio <= LATENCY_TARGET ? 1 : 0;
                }
                b.append(String.format(Locale.ROOT, "| %s | %.2f | %.2f | %.2f | %.3f | %.3f | %s | %s | %s |%n",
                        ByteSizes.format(size), ot, pt, timeRatio, ob, pb,
                        Double.isNaN(bwRatio) ? "-" : String.format(Locale.ROOT, "%.2f", bwRatio), o.get("algo"),
                        o.get("wrong") + " / " + p.get("wrong")));
            }
            b.append('\n');
            b.append(String.format(Locale.ROOT,
                    "From 1M up, busbw ratio rdma4j / %s: geometric mean %.2f, min %.2f; at least equal at %d of %d sizes.%n%n",
                    peerName, geomean(bwRatios), min(bwRatios), bwMet, bwRatios.size()));
            b.append(String.format(Locale.ROOT,
                    "8 B - 4K, time ratio rdma4j / %s: geometric mean %.2f, max %.2f; within %.1fx at %d of %d sizes.%n",
                    peerName, geomean(latRatios), max(latRatios), LATENCY_TARGET, latMet, latRatios.size()));
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
