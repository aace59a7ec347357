package io.rdma4j.examples;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.transport.Transport;
import io.rdma4j.verbs.RdmaDevices;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * rdma4j as a user's program takes it: the README's quickstart, as a module of its own
 * ({@code requires io.rdma4j.collectives}), compiled against the library modules this build
 * made and run as two ranks on the module path; the same source compiled and run on the class
 * path; and a program that reaches into an internal package refused by the compiler.
 */
@Timeout(180)
class ModularConsumerTest {
    private static final String MODULES = "io.rdma4j.nativesupport,io.rdma4j.verbs,io.rdma4j.transport,io.rdma4j.collectives";
    private static String libraryPath;
    private static String quickstart;

    @TempDir
    Path dir;

    @BeforeAll
    static void locateTheLibraryModules() throws IOException, URISyntaxException {
        List<String> entries = new ArrayList<>();
        for (Class<?> c : List.of(NativeResource.class, RdmaDevices.class, Transport.class, Communicator.class)) {
            Path where = Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
            assertTrue(Files.exists(where.resolve("module-info.class")) || where.toString().endsWith(".jar"), where.toString());
            entries.add(where.toString());
        }
        libraryPath = String.join(File.pathSeparator, entries);
        String source = Files.readString(Path.of("src/main/java/io/rdma4j/examples/Quickstart.java"));
        quickstart = source.replace("package io.rdma4j.examples;", "package consumer;");
    }

    private static String compile(List<String> options, Path... sources) {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        List<String> args = new ArrayList<>(options);
        for (Path s : sources) {
            args.add(s.toString());
        }
        int rc = javac.run(null, diagnostics, diagnostics, args.toArray(String[]::new));
        return rc == 0 ? null : diagnostics.toString(StandardCharsets.UTF_8);
    }

    private Path write(String relative, String text) throws IOException {
        Path p = dir.resolve(relative);
        Files.createDirectories(p.getParent());
        Files.writeString(p, text);
        return p;
    }

    private static Ranks.Launch twoRanks(IntFunction<List<String>> command) throws Exception {
        int port = Shell.freePort();
        return Ranks.startByHand(2, command, r -> Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT",
                Integer.toString(port), "WORLD_SIZE", "2", "RANK", Integer.toString(r), "LOCAL_RANK",
                Integer.toString(r), "LOCAL_WORLD_SIZE", "2", "RDMA4J_JOB_TOKEN", "modular", "RDMA4J_TRANSPORT", "shm"),
                Duration.ofSeconds(120));
    }

    private static void assertBothRanksAdded(Ranks.Launch l) {
        assertEquals(0, l.status(), l::all);
        for (int r = 0; r < 2; r++) {
            assertTrue(l.out().contains("[rank " + r + "] rank " + r + " of 2 over shm: sum 3.0 OK"), l::all);
        }
        assertTrue(!l.err().contains("restricted method"), "the documented flags enable native access:\n" + l.all());
    }

    @Test
    void theQuickstartAsAModuleRunsOnTheModulePath() throws Exception {
        Path info = write("src/consumer/module-info.java", "module consumer {\n    requires io.rdma4j.collectives;\n}\n");
        Path main = write("src/consumer/consumer/Quickstart.java", quickstart);
        Path out = dir.resolve("mods/consumer");
        String errors = compile(List.of("--module-path", libraryPath, "-d", out.toString()), info, main);
        assertEquals(null, errors);
        Ranks.Launch l = twoRanks(r -> Ranks.jvm("--module-path", out + File.pathSeparator + libraryPath,
                "--enable-native-access=" + MODULES, "-m", "consumer/consumer.Quickstart"));
        assertBothRanksAdded(l);
    }

    @Test
    void theSameSourceRunsOnTheClassPath() throws Exception {
        Path main = write("src/cp/consumer/Quickstart.java", quickstart);
        Path out = dir.resolve("classes");
        assertEquals(null, compile(List.of("-cp", libraryPath, "-d", out.toString()), main));
        Ranks.Launch l = twoRanks(r -> Ranks.jvm("-cp", out + File.pathSeparator + libraryPath,
                "--enable-native-access=ALL-UNNAMED", "consumer.Quickstart"));
        assertBothRanksAdded(l);
    }

    @Test
    void aModuleCannotReachTheInternals() throws Exception {
        Path info = write("src/snoop/module-info.java", "module snoop {\n    requires io.rdma4j.collectives;\n}\n");
        Path main = write("src/snoop/snoop/Snoop.java", """
                package snoop;

                public final class Snoop {
                    Object engine = io.rdma4j.collectives.core.Engine.class;
                    Object slots = io.rdma4j.transport.internal.RequestSlots.class;
                    Object bindings = io.rdma4j.verbs.ffi.Verbs.class;
                }
                """);
        String errors = compile(List.of("--module-path", libraryPath, "-d", dir.resolve("snoop").toString()), info, main);
        assertNotEquals(null, errors, "internal packages must not be visible to a module");
        for (String pkg : new String[] {"io.rdma4j.collectives.core", "io.rdma4j.transport.internal", "io.rdma4j.verbs.ffi"}) {
            assertTrue(errors.contains("package " + pkg + " is not visible")
                    || errors.contains("package " + pkg + " is declared in module"), pkg + ":\n" + errors);
        }
        try (Stream<Path> s = Files.walk(dir)) {
            assertTrue(s.noneMatch(p -> p.toString().endsWith("Snoop.class")), "nothing may be compiled");
        }
    }
}
