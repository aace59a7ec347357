package io.rdma4j.transport.shm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What a rank publishes in the bootstrap store so that peers can open its shared files: its pid
 * (for liveness checks), the directory and file-name prefix of its files, and the identity of the
 * host and pid namespace it runs in. Two ranks only share memory when both identities match; a
 * mismatch (ranks on different hosts or in different containers) fails the connection with a
 * clear message instead of mapping a same-named file that is not the peer's.
 */
record PeerInfo(int rank, long pid, String dir, String prefix, String host) {

    static String storeKey(int rank) {
        return "rdma4j/shm/rank/" + rank;
    }

    /** This host's boot id plus this process's pid namespace. */
    static String localHost() {
        String boot = readOr(Path.of("/proc/sys/kernel/random/boot_id"), "unknown-boot");
        return boot + "/pidns-" + ShmFiles.PID_NAMESPACE;
    }

    byte[] toBytes() {
        byte[][] strings = {utf8(dir), utf8(prefix), utf8(host)};
        int n = 4 + 8;
        for (byte[] s : strings) {
            n += 4 + s.length;
        }
        ByteBuffer b = ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN).putInt(rank).putLong(pid);
        for (byte[] s : strings) {
            b.putInt(s.length).put(s);
        }
        return b.array();
    }

    static PeerInfo fromBytes(byte[] bytes) {
        try {
            ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
            return new PeerInfo(b.getInt(), b.getLong(), string(b), string(b), string(b));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("malformed shm peer descriptor of " + bytes.length + " bytes", e);
        }
    }

    private static String string(ByteBuffer b) {
        byte[] s = new byte[b.getInt()];
        b.get(s);
        return new String(s, StandardCharsets.UTF_8);
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String readOr(Path file, String fallback) {
        try {
            return Files.readString(file).trim();
        } catch (IOException e) {
            return fallback;
        }
    }
}
