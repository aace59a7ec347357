package io.rdma4j.gpu;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Finds the kernel module that lets RDMA drivers pin GPU memory through ibv_reg_mr:
 * nvidia_peermem (in the NVIDIA driver since 465), or the older out-of-tree nv_peer_mem.
 */
final class PeerMemModule {
    static final List<String> NAMES = List.of("nvidia_peermem", "nv_peer_mem");

    private PeerMemModule() {
    }

    static Optional<String> loaded() {
        return loaded(Path.of("/sys/module"), Path.of("/proc/modules"));
    }

    /** The first module of {@link #NAMES} present in {@code sysModule} or listed in {@code procModules}. */
    static Optional<String> loaded(Path sysModule, Path procModules) {
        for (String name : NAMES) {
            if (Files.isDirectory(sysModule.resolve(name))) {
                return Optional.of(name);
            }
        }
        if (!Files.isReadable(procModules)) {
            return Optional.empty();
        }
        try (Stream<String> lines = Files.lines(procModules)) {
            return lines.map(line -> line.split(" ", 2)[0]).filter(NAMES::contains).findFirst();
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }
}
