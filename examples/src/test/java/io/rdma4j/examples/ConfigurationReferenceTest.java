package io.rdma4j.examples;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.MalformedInputException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/configuration.md against the code: every {@code RDMA4J_*} variable that a source file or
 * script of this repository mentions is listed once, every listed one is mentioned somewhere,
 * and the first reader a row names (a class as {@code module: Class}, or a script path) mentions it.
 */
class ConfigurationReferenceTest {
    private static final Path ROOT = Path.of("..");
    private static final Pattern NAME = Pattern.compile("RDMA4J_[A-Z0-9_]*[A-Z0-9]");
    private static final Pattern ROW = Pattern.compile("^\\| `(RDMA4J_[A-Z0-9_]+)` \\|.*\\| ([^|]+) \\|$", Pattern.MULTILINE);
    /** Folders of scripts (any file in them is read); elsewhere only Java sources and shell files. */
    private static final Set<String> SCRIPT_DIRS = Set.of("bin", "scripts", "benchmarks/scripts", ".mvn", ".ci",
            "native-headers");

    @Test
    void everyVariableTheCodeReadsIsDocumentedAndEveryDocumentedOneIsRead() throws IOException {
        Map<String, String> documented = documented();
        Map<String, Path> inCode = mentionedInCode();
        Set<String> undocumented = new TreeSet<>(inCode.keySet());
        undocumented.removeAll(documented.keySet());
        assertTrue(undocumented.isEmpty(), "read by the code but missing from docs/configuration.md: "
                + describe(undocumented, inCode));
        Set<String> stale = new TreeSet<>(documented.keySet());
        stale.removeAll(inCode.keySet());
        assertTrue(stale.isEmpty(), "documented but read nowhere: " + stale);
    }

    @Test
    void theFirstReaderOfEachRowMentionsTheVariable() throws IOException {
        for (Map.Entry<String, String> row : documented().entrySet()) {
            Path reader = readerFile(row.getValue());
            assertTrue(Files.readString(reader).contains(row.getKey()),
                    row.getKey() + " is documented as read by " + row.getValue() + " but " + reader + " never mentions it");
        }
    }

    /** Variable to its "read by" cell, in document order; each listed once. */
    private static Map<String, String> documented() throws IOException {
        String doc = Files.readString(ROOT.resolve("docs/configuration.md"));
        Map<String, String> rows = new LinkedHashMap<>();
        Matcher m = ROW.matcher(doc);
        while (m.find()) {
            assertFalse(rows.containsKey(m.group(1)), m.group(1) + " is listed twice");
            rows.put(m.group(1), m.group(2).trim());
        }
        assertTrue(rows.size() > 20, "too few rows parsed from docs/configuration.md: " + rows.keySet());
        return rows;
    }

    /** The file of a row's first reader: {@code module: Class} names {@code Class.java} in that module, else a path. */
    private static Path readerFile(String cell) throws IOException {
        String first = cell.split(" \\(|;|,")[0].trim();
        int colon = first.indexOf(": ");
        if (colon < 0) {
            Path p = ROOT.resolve(first);
            assertTrue(Files.isRegularFile(p), "reader " + first + " is not a file of the repository");
            return p;
        }
        Path module = ROOT.resolve(first.substring(0, colon)).resolve("src");
        String file = first.substring(colon + 2) + ".java";
        try (Stream<Path> s = Files.walk(module)) {
            return s.filter(p -> p.getFileName().toString().equals(file)).findFirst()
                    .orElseThrow(() -> new AssertionError("no " + file + " under " + module + " (reader " + first + ")"));
        }
    }

    /** Every variable name in the sources and scripts, with one file that mentions it. */
    private static Map<String, Path> mentionedInCode() throws IOException {
        Map<String, Path> names = new TreeMap<>();
        try (Stream<Path> files = Files.walk(ROOT)) {
            files.filter(Files::isRegularFile).filter(ConfigurationReferenceTest::isCode).forEach(f -> {
                Matcher m = NAME.matcher(read(f));
                while (m.find()) {
                    names.putIfAbsent(m.group(), f);
                }
            });
        }
        assertTrue(names.containsKey("RDMA4J_TRANSPORT"), "the scan found not even RDMA4J_TRANSPORT: wrong root?");
        return names;
    }

    private static boolean isCode(Path f) {
        String rel = ROOT.relativize(f).toString().replace('\\', '/');
        if (rel.contains("/target") || rel.startsWith("target") || rel.contains("/st1/") || rel.startsWith(".git/")
                || rel.endsWith(ConfigurationReferenceTest.class.getSimpleName() + ".java")) {
            return false;
        }
        String name = f.getFileName().toString();
        if (name.endsWith(".java") || name.endsWith(".sh")) {
            return true;
        }
        return !name.endsWith(".h") && !name.endsWith(".md")
                && SCRIPT_DIRS.stream().anyMatch(d -> rel.startsWith(d + "/"));
    }

    private static String read(Path f) {
        try {
            return Files.readString(f);
        } catch (MalformedInputException binary) {
            return "";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String describe(Set<String> names, Map<String, Path> where) {
        StringBuilder sb = new StringBuilder();
        for (String n : names) {
            sb.append(n).append(" (").append(ROOT.relativize(where.get(n))).append(") ");
        }
        return sb.toString();
    }
}
