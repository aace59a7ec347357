import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

import javax.xml.parsers.DocumentBuilderFactory;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads the effective POM of a reactor (maven-help-plugin's effective-pom goal) and writes, for
 * every module, the settings its Surefire test run gets: the argLine's JVM options, the system
 * property variables as -D options, the environment variables. scripts/softroce-test starts the
 * guest's test JVMs with them, so each module's tests run there as Surefire runs them here.
 *
 * <p>Usage: {@code java SurefireSettings.java EFFECTIVE_POM FILE_NAME}: writes
 * {@code <module>/<build directory>/FILE_NAME}, one setting per line, "jvm" or "env", a tab, the
 * value. The argLine is split at whitespace, as Surefire splits it (no quoting in our POMs).
 */
public final class SurefireSettings {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            throw new IllegalArgumentException("usage: SurefireSettings EFFECTIVE_POM FILE_NAME");
        }
        DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
        Document doc = factory.newDocumentBuilder().parse(Path.of(args[0]).toFile());
        int written = 0;
        for (Element project : children(doc.getDocumentElement(), "project")) {
            Element build = child(project, "build");
            Element directory = build == null ? null : child(build, "directory");
            if (directory == null) {
                continue;
            }
            Element configuration = surefireConfiguration(child(build, "plugins"));
            List<String> lines = new ArrayList<>();
            if (configuration != null) {
                Element argLine = child(configuration, "argLine");
                if (argLine != null) {
                    for (String option : argLine.getTextContent().strip().split("\\s+")) {
                        if (!option.isEmpty()) {
                            lines.add("jvm\t" + option);
                        }
                    }
                }
                for (Element p : children(child(configuration, "systemPropertyVariables"), null)) {
                    lines.add("jvm\t-D" + p.getTagName() + "=" + p.getTextContent().strip());
                }
                for (Element v : children(child(configuration, "environmentVariables"), null)) {
                    lines.add("env\t" + v.getTagName() + "=" + v.getTextContent().strip());
                }
            }
            Path out = Path.of(directory.getTextContent().strip()).resolve(args[1]);
            write(out, lines);
            written++;
        }
        if (written == 0) {
            throw new IllegalStateException(args[0] + " holds no project with a build directory");
        }
    }

    /** The test goal's configuration: that of the default-test execution if it has one, else the plugin's. */
    private static Element surefireConfiguration(Element plugins) {
        for (Element plugin : children(plugins, "plugin")) {
            Element artifact = child(plugin, "artifactId");
            if (artifact == null || !artifact.getTextContent().strip().equals("maven-surefire-plugin")) {
                continue;
            }
            for (Element execution : children(child(plugin, "executions"), "execution")) {
                Element id = child(execution, "id");
                Element configuration = child(execution, "configuration");
                if (id != null && id.getTextContent().strip().equals("default-test") && configuration != null) {
                    return configuration;
                }
            }
            return child(plugin, "configuration");
        }
        return null;
    }

    private static void write(Path out, List<String> lines) throws IOException {
        Files.createDirectories(out.getParent());
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out))) {
            lines.forEach(w::println);
        }
    }

    private static Element child(Element parent, String name) {
        List<Element> found = children(parent, name);
        return found.isEmpty() ? null : found.get(0);
    }

    /** The element children of {@code parent} named {@code name} (all of them if null). */
    private static List<Element> children(Element parent, String name) {
        List<Element> found = new ArrayList<>();
        if (parent == null) {
            return found;
        }
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && (name == null || e.getTagName().equals(name))) {
                found.add(e);
            }
        }
        return found;
    }
}
