package io.rdma4j.transport;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * A serialisable descriptor of a peer's registered memory: which rank owns it, its address and
 * length as the owner's provider names them, and its key (rkey for verbs; a region id for shared
 * memory and TCP). {@code name} identifies a provider-level object the peer must open first
 * (the shared-memory file), empty when none.
 */
public record RemoteBuffer(int owner, long address, long length, long key, String name) {

    public RemoteBuffer {
        if (length < 0) {
            throw new IllegalArgumentException("negative remote buffer length " + length);
        }
        name = name == null ? "" : name;
    }

    /** Whether {@code [offset, offset + bytes)} lies inside this buffer. */
    public boolean contains(long offset, long bytes) {
        return offset >= 0 && bytes >= 0 && offset <= length && bytes <= length - offset;
    }

    public byte[] toBytes() {
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(4 + 8 + 8 + 8 + 4 + n.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(owner).putLong(address).putLong(length).putLong(key).putInt(n.length).put(n);
        return b.array();
    }

    public static RemoteBuffer fromBytes(byte[] bytes) {
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int owner = b.getInt();
        long address = b.getLong();
        long length = b.getLong();
        long key = b.getLong();
        byte[] n = new byte[b.getInt()];
        b.get(n);
        return new RemoteBuffer(owner, address, length, key, new String(n, StandardCharsets.UTF_8));
    }
}
