package io.rdma4j.bench.compare;

import io.rdma4j.bench.ByteSizes;
import io.rdma4j.bench.plot.ComparisonPlot;
import io.rdma4j.bench.plot.Series;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import static io.rdma4j.bench.compare.Reports.geomean;
import static io.rdma4j.bench.compare.Reports.num;
import static io.rdma4j.bench.compare.Reports.write;

/**
 * The point-to-point comparison: rdma4j's providers (p2p-perf) against our osu-style MPI
 * benchmark, from their CSVs (columns system, transport, test, size_bytes, iters, value, unit):
 * a markdown table of latency and bandwidth per size with ratios against the peer, and a plot.
 * Optional reference lines (e.g. single-thread memcpy, iperf3) come as {@code --ref NAME=GB/s}.
 */
public final class P2pComparison {
    private P2pComparison() {
    }

    public static void main(String[] args) {
        Path md = null;
        Path png = null;
        String command = "benchmarks/scripts/compare-p2p";
        Map<String, Double> refs = new LinkedHashMap<>();
        List<Path> inputs = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--md" -> md = Path.of(args[++i]);
                case "--png" -> png = Path.of(args[++i]);
                case "--command" -> command = args[++i];
                case "--ref" -> {
                    String[] kv = args[++i].split("=", 2);
                    refs.put(kv[0], Double.parseDouble(kv[1]));
                }
                default -> inputs.add(Path.of(args[i]));
            }
        }
        if (md == null || png == null || inputs.isEmpty()) {
            System.err.println("usage: P2pComparison --md FILE --png FILE [--command TEXT] [--ref NAME=GB/s] CSV...");
            System.exit(2);
        }
        // "system transport" -> test -> size -> value
        Map<String, Map<String, TreeMap<Long, Double>>> data = new LinkedHashMap<>();
        for (Path p : inputs) {
            for (Map<String, String> row : CsvTable.read(p).rows()) {
                String who = label(row.get("system"), row.get("transport"));
                data.computeIfAbsent(who, k -> new LinkedHashMap<>())
                        .computeIfAbsent(row.get("test"), k -> new TreeMap<>())
                        .put(Long.parseLong(row.get("size_bytes")), num(row, "value"));
            }
        }
        write(md, markdown(data, refs, command));
        plot(png, data, refs);
        System.out.println("wrote " + md + " and " + png);
    }

    private static String label(String system, String transport) {
        return system.equals("rdma4j") ? "rdma4j " + transport : "Open MPI";
    }

    static String markdown(Map<String, Map<String, TreeMap<Long, Double>>> data, Map<String, Double> refs,
                           String command) {
        StringBuilder b = new StringBuilder("# rdma4j point-to-point vs Open MPI (osu-style)\n\n");
        b.append("Machine: ").append(MachineInfo.describe()).append(".\n\n");
        b.append("Regenerate with `").append(command).append("`. Latency: half a ping-pong round trip; bandwidth: ");
        b.append("windows of 64 back-to-back sends, each window acknowledged (as osu_latency / osu_bw). rdma4j: ");
        b.append("`bin/rdma4j p2p-perf` (two JVMs, two-sided isend/irecv on one provider, registered buffers); ");
        b.append("Open MPI: `benchmarks/c/osu_style_pt2pt.c` under `mpirun`. Plot: `p2p-vs-openmpi.png`.\n");
        if (!refs.isEmpty()) {
            b.append("\nReferences measured in the same run:");
            refs.forEach((k, v) -> b.append(String.format(Locale.ROOT, " %s %.2f GB/s;", k, v)));
            b.setLength(b.length() - 1);
            b.append(".\n");
        }
        String peer = "Open MPI";
        List<String> who = new ArrayList<>(data.keySet());
        for (String test : List.of("latency", "bandwidth")) {
            String unit = test.equals("latency") ? "us" : "GB/s";
            b.append("\n## ").append(test).append(" (").append(unit).append(")\n\n| size |");
            for (String w : who) {
                b.append(' ').append(w).append(" |");
            }
            for (String w : who) {
                if (!w.equals(peer)) {
                    b.append(' ').append(w).append(" / ").append(peer).append(" |");
                }
            }
            b.append("\n|---:|");
            b.append("---:|".repeat(who.size() * 2 - (who.contains(peer) ? 1 : 0)));
            b.append('\n');
            TreeSet<Long> sizes = new TreeSet<>();
            for (String w : who) {
                sizes.addAll(data.get(w).getOrDefault(test, new TreeMap<>()).keySet());
            }
            Map<String, List<Double>> ratios = new LinkedHashMap<>();
            for (long size : sizes) {
                b.append("| ").append(ByteSizes.format(size)).append(" |");
                for (String w : who) {
                    Double v = data.get(w).getOrDefault(test, new TreeMap<>()).get(size);
                    b.append(v == null ? " - |" : String.format(Locale.ROOT, " %.3f |", v));
                }
                Double pv = data.getOrDefault(peer, Map.of()).getOrDefault(test, new TreeMap<>()).get(size);
                for (String w : who) {
                    if (w.equals(peer)) {
                        continue;
                    }
                    Double v = data.get(w).getOrDefault(test, new TreeMap<>()).get(size);
                    if (v == null || pv == null || pv == 0) {
                        b.append(" - |");
                    } else {
                        b.append(String.format(Locale.ROOT, " %.2f |", v / pv));
                        if (test.equals("latency") || size >= (1L << 20)) {
                            ratios.computeIfAbsent(w, k -> new ArrayList<>()).add(v / pv);
                        }
                    }
                }
                b.append('\n');
            }
            b.append('\n');
            ratios.forEach((w, r) -> b.append(String.format(Locale.ROOT, "%s / %s %s ratio%s: geometric mean %.2f.%n%n",
                    w, peer, test, test.equals("latency") ? " (all sizes; lower is better)" : " from 1M up", geomean(r))));
        }
        return b.toString();
    }

    static void plot(Path png, Map<String, Map<String, TreeMap<Long, Double>>> data, Map<String, Double> refs) {
        List<Series> bw = new ArrayList<>();
        List<Series> lat = new ArrayList<>();
        // the peer is red (colour 1); rdma4j's providers take the others, references after them
        int[] ourColours = {0, 2, 3};
        int next = 0;
        long maxSize = 1;
        for (Map.Entry<String, Map<String, TreeMap<Long, Double>>> e : data.entrySet()) {
            boolean peer = !e.getKey().startsWith("rdma4j");
            int c = peer ? 1 : ourColours[next++ % ourColours.length];
            bw.add(new Series(e.getKey(), points(e.getValue().get("bandwidth")), c, peer));
            lat.add(new Series(e.getKey(), points(e.getValue().get("latency")), c, peer));
            TreeMap<Long, Double> m = e.getValue().get("bandwidth");
            if (m != null && !m.isEmpty()) {
                maxSize = Math.max(maxSize, m.lastKey());
            }
        }
        int refColour = 4;
        for (Map.Entry<String, Double> r : refs.entrySet()) {
            bw.add(new Series(r.getKey(), List.of(new double[] {1, r.getValue()}, new double[] {maxSize, r.getValue()}),
                    refColour++, true));
        }
        ComparisonPlot.write(png, "Point-to-point: rdma4j providers vs Open MPI (2 ranks, one host)",
                MachineInfo.describe(), List.of(new ComparisonPlot.Panel("bandwidth (GB/s, log)", true, bw),
                        new ComparisonPlot.Panel("latency (us, log)", true, lat)), 1200, 900);
    }

    private static List<double[]> points(TreeMap<Long, Double> m) {
        List<double[]> pts = new ArrayList<>();
        if (m != null) {
            m.forEach((k, v) -> pts.add(new double[] {k, v}));
        }
        return pts;
    }
}
