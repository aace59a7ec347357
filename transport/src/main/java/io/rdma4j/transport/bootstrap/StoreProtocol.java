package io.rdma4j.transport.bootstrap;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The TCP store's wire format, shared by {@link TcpStore} and {@link TcpStoreServer}: every
 * message is a big-endian {@code int} length followed by that many bytes, whose first byte is an
 * opcode. Strings and byte arrays inside are length-prefixed. The first request on a connection
 * must be {@link #HELLO} with the job token; the server refuses anything else.
 */
final class StoreProtocol {
    static final int MAGIC = 0x52344A53; // "R4JS"
    static final int VERSION = 1;

    /** Requests. */
    static final byte HELLO = 1;
    static final byte SET = 2;
    static final byte GET = 3;
    static final byte ADD = 4;
    static final byte DELETE = 5;

    /** Responses. */
    static final byte OK = 0;
    static final byte NOT_FOUND = 1;
    static final byte ERROR = 2;

    /** A frame before the handshake is small; a hostile client cannot make the server allocate. */
    static final int MAX_HELLO_FRAME = 4096;
    static final int MAX_FRAME = 64 << 20;
    static final int MAX_KEY_BYTES = 4096;

    private StoreProtocol() {
    }

    static byte[] readFrame(DataInputStream in, int maxBytes) throws IOException {
        int length = in.readInt();
        if (length < 1 || length > maxBytes) {
            throw new IOException("store frame of " + length + " bytes (limit " + maxBytes + ")");
        }
        byte[] frame = new byte[length];
        in.readFully(frame);
        return frame;
    }

    static void writeFrame(DataOutputStream out, byte[] frame) throws IOException {
        out.writeInt(frame.length);
        out.write(frame);
        out.flush();
    }

    static void writeString(DataOutputStream out, String s) throws IOException {
        writeBytes(out, s.getBytes(StandardCharsets.UTF_8));
    }

    static void writeBytes(DataOutputStream out, byte[] b) throws IOException {
        out.writeInt(b.length);
        out.write(b);
    }

    static String readString(DataInputStream in) throws IOException {
        return new String(readBytes(in, MAX_KEY_BYTES), StandardCharsets.UTF_8);
    }

    static byte[] readBytes(DataInputStream in, int max) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > max) {
            throw new EOFException("field of " + n + " bytes (limit " + max + ")");
        }
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }

    /**
     * Refuses a value whose request would exceed {@link #MAX_FRAME}: the server would refuse the
     * frame unread and close the connection, and the client would see only a broken pipe.
     */
    static void checkValue(String key, byte[] value) {
        long frame = 1L + 4 + key.getBytes(StandardCharsets.UTF_8).length + 4 + value.length;
        if (frame > MAX_FRAME) {
            throw new IllegalArgumentException("store value of " + value.length + " bytes for key '" + key
                    + "' does not fit a TCP store request (at most " + MAX_FRAME + " bytes with its key)");
        }
    }

    static String checkKey(String key) {
        if (key == null || key.isEmpty()) {
            throw new IllegalArgumentException("store key must not be empty");
        }
        if (key.getBytes(StandardCharsets.UTF_8).length > MAX_KEY_BYTES) {
            throw new IllegalArgumentException("store key longer than " + MAX_KEY_BYTES + " bytes: " + key.substring(0, 64) + "...");
        }
        return key;
    }

    /** Counters are stored as their decimal text, so that {@code get} of a counter is readable. */
    static long parseCounter(String key, byte[] value) {
        try {
            return Long.parseLong(new String(value, StandardCharsets.UTF_8));
        } catch (NumberFormatException e) {
            throw new IllegalStateException("store key '" + key + "' holds a value that is not a counter");
        }
    }

    static byte[] counterBytes(long value) {
        return Long.toString(value).getBytes(StandardCharsets.UTF_8);
    }
}
