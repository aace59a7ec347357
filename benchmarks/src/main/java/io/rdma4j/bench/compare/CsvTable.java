package io.rdma4j.bench.compare;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** A results CSV (plain comma-separated, a header line, no quoting: what our benchmarks write). */
public final class CsvTable {
    private final List<Map<String, String>> rows;

    private CsvTable(List<Map<String, String>> rows) {
        this.rows = rows;
    }

    public static CsvTable read(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
        if (lines.isEmpty()) {
            throw new IllegalArgumentException(file + " is empty (did the benchmark run?)");
        }
        String[] header = lines.getFirst().split(",");
        List<Map<String, String>> rows = new ArrayList<>();
        for (int i = 1; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.isBlank()) {
                continue;
            }
            String[] cells = line.split(",", -1);
            if (cells.length != header.length) {
                throw new IllegalArgumentException(file + " line " + (i + 1) + " has " + cells.length + " cells, the header "
                        + header.length);
            }
            Map<String, String> row = new HashMap<>();
            for (int c = 0; c < header.length; c++) {
                row.put(header[c], cells[c]);
            }
            rows.add(row);
        }
        return new CsvTable(rows);
    }

    public List<Map<String, String>> rows() {
        return rows;
    }
}
