package io.rdma4j.bench.compare;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** Small helpers the comparison reports share. */
final class Reports {
    private Reports() {
    }

    static double num(Map<String, String> row, String key) {
        String v = row.get(key);
        if (v == null) {
            throw new IllegalArgumentException("results row without column '" + key + "': " + row);
        }
        return Double.parseDouble(v);
    }

    static double geomean(List<Double> xs) {
        if (xs.isEmpty()) {
            return Double.NaN;
        }
        double s = 0;
        for (double x : xs) {
            s += Math.log(x);
        }
        return Math.exp(s / xs.size());
    }

    static double min(List<Double> xs) {
        return xs.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN);
    }

    static double max(List<Double> xs) {
        return xs.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
    }

    static void write(Path file, String text) {
        try {
            Path parent = file.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            Files.writeString(file, text);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
        }
    }
}
