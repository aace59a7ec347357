package io.rdma4j.examples;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The README's quickstart: its code is {@link Quickstart}, its coordinates are this build's, and it runs. */
@Timeout(120)
class QuickstartTest {
    private static final Path README = Path.of("..", "README.md");
    private static final Path SOURCE = Path.of("src", "main", "java", "io", "rdma4j", "examples", "Quickstart.java");

    @Test
    void theReadmeShowsTheQuickstartSourceAsItIs() throws Exception {
        String source = Files.readString(SOURCE);
        String withoutPackage = source.substring(source.indexOf("\n\n") + 2);
        String readme = Files.readString(README);
        assertTrue(readme.contains("```java\n" + withoutPackage + "```"),
                "README's java block differs from " + SOURCE + "; copy the file (without its package line) into it");
        String lines = withoutPackage.strip();
        long count = lines.lines().count();
        assertTrue(count <= 30, "the quickstart should stay short: " + count + " lines");
    }

    @Test
    void theReadmeDependencyIsThisBuildsArtifact() throws Exception {
        Matcher parent = Pattern.compile("<artifactId>rdma4j-parent</artifactId>\\s*<version>([^<]+)</version>")
                .matcher(Files.readString(Path.of("pom.xml")));
        assertTrue(parent.find(), "no parent version in examples/pom.xml");
        String dependency = "<groupId>io.rdma4j</groupId>\n  <artifactId>collectives</artifactId>\n  <version>"
                + parent.group(1) + "</version>";
        assertTrue(Files.readString(README).contains(dependency), "README should show " + dependency);
    }

    @Test
    void twoRanksOfTheQuickstartAddTheirVectors() throws Exception {
        Ranks.Launch l = Ranks.launch(Map.of(), Ranks.launcherArgs(2, Quickstart.class));
        assertEquals(0, l.status(), l::all);
        for (int r = 0; r < 2; r++) {
            // ranks contribute 1 and 2; the transport is the automatic choice (shm on one host without RDMA)
            assertTrue(Pattern.compile("rank " + r + " of 2 over \\w+: sum 3\\.0 OK").matcher(l.out()).find(), l::all);
        }
    }
}
