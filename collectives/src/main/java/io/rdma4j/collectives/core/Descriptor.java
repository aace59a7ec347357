package io.rdma4j.collectives.core;

import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * What a rank believes the current collective is: kind, data type, operator, element count,
 * root, algorithm and the communicator's sequence number. Every collective begins by exchanging
 * it with each peer it will talk to; a receiver compares it field by field with its own, so a
 * mismatching call fails on both sides before any payload moves. Mutable and reused (the hot
 * path allocates nothing); 32 bytes on the wire, little-endian.
 */
public final class Descriptor {
    public static final int BYTES = 32;
    /**
     * Payload that may travel with a descriptor in one message: the recursive-doubling allreduce's
     * whole vector (see {@code AlgorithmPolicy#TCP_RECURSIVE_DOUBLING_BYTES}).
     */
    public static final int EAGER_BYTES = 64 * 1024;
    /**
     * Size of every control slot (and capacity of every control-lane receive): a descriptor
     * plus an eager payload, so that whatever a mismatching peer sends on the control lane fits
     * and is diagnosed as a mismatch rather than failing the transport.
     */
    public static final int CONTROL_SLOT = BYTES + EAGER_BYTES;
    private static final int MAGIC = 0x434A3452; // "R4JC"
    private static final ValueLayout.OfInt I = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong L = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfByte B = ValueLayout.JAVA_BYTE;

    public CollectiveKind kind;
    /** Data type code, -1 when the collective has none (barrier). */
    public int dtype = -1;
    /** Operator code, -1 when the collective does not reduce. */
    public int op = -1;
    /** Algorithm code ({@link io.rdma4j.collectives.Algorithm#ordinal()}), -1 when not applicable. */
    public int algo = -1;
    public long seq;
    public long count;
    public int root = -1;
    /** The sender's world rank (informational; not compared). */
    public int sender;

    public Descriptor set(CollectiveKind kind, DataType type, ReduceOp op, long count, int root, int algo, long seq) {
        this.kind = kind;
        this.dtype = type == null ? -1 : type.code();
        this.op = op == null ? -1 : op.code();
        this.count = count;
        this.root = root;
        this.algo = algo;
        this.seq = seq;
        return this;
    }

    public Descriptor copyFrom(Descriptor o) {
        kind = o.kind;
        dtype = o.dtype;
        op = o.op;
        algo = o.algo;
        seq = o.seq;
        count = o.count;
        root = o.root;
        sender = o.sender;
        return this;
    }

    public void write(MemorySegment s, long off) {
        // four 8-byte stores instead of one per field: every segment access is a call in C1 code,
        // which is all the JVMs in the Soft-RoCE guest run
        s.set(L, off, head());
        s.set(L, off + 8, seq);
        s.set(L, off + 16, count);
        s.set(L, off + 24, (root & 0xFFFF_FFFFL) | (long) sender << 32);
    }

    /** Bytes 0-7 as one little-endian long: the magic, then kind, dtype, op and algo a byte each. */
    private long head() {
        return (MAGIC & 0xFFFF_FFFFL) | ((long) kind.ordinal() & 0xFF) << 32 | ((long) dtype & 0xFF) << 40
                | ((long) op & 0xFF) << 48 | ((long) algo & 0xFF) << 56;
    }

    /** Whether the descriptor at {@code off} (of {@code received} bytes) equals this one. */
    public boolean matches(MemorySegment s, long off, long received) {
        return received == BYTES && matchesHeader(s, off);
    }

    /** Whether a message starting at {@code off} (at least {@link #BYTES} long) begins with this descriptor. */
    public boolean matchesHeader(MemorySegment s, long off) {
        return s.get(L, off) == head()
                && s.get(L, off + 8) == seq
                && s.get(L, off + 16) == count
                && s.get(I, off + 24) == root;
    }

    /** Decodes a received descriptor (error path only). */
    public static Descriptor read(MemorySegment s, long off, long received) {
        Descriptor d = new Descriptor();
        if (received < BYTES || s.get(I, off) != MAGIC) {
            return null;
        }
        d.kind = CollectiveKind.fromCode(s.get(B, off + 4));
        d.dtype = s.get(B, off + 5);
        d.op = s.get(B, off + 6);
        d.algo = s.get(B, off + 7);
        d.seq = s.get(L, off + 8);
        d.count = s.get(L, off + 16);
        d.root = s.get(I, off + 24);
        d.sender = s.get(I, off + 28);
        return d;
    }

    /** Bytes that {@link #writePacked} writes. */
    public static final int PACKED_BYTES = 24;

    /**
     * Writes what {@link #matchesPacked} compares, in {@link #PACKED_BYTES}: the shape
     * ({@link #packedShape}), the sequence number and the count, without the magic and the sender
     * (for memory whose owner and validity the reader knows otherwise: a shared window's slot).
     */
    public void writePacked(MemorySegment s, long off) {
        s.set(L, off, packedShape());
        s.set(L, off + 8, seq);
        s.set(L, off + 16, count);
    }

    /** Whether the packed descriptor at {@code off} ({@link #writePacked}) equals this one (the sender aside). */
    public boolean matchesPacked(MemorySegment s, long off) {
        return s.get(L, off) == packedShape() && s.get(L, off + 8) == seq && s.get(L, off + 16) == count;
    }

    /** Decodes a packed descriptor ({@link #writePacked}; error path only): its sender is unknown, 0. */
    public static Descriptor readPacked(MemorySegment s, long off) {
        return unpack(s.get(L, off), s.get(L, off + 16), s.get(L, off + 8));
    }

    /** Packs kind, dtype, op, algo and root into one long (for the fault board's registers). */
    public long packedShape() {
        return ((long) kind.ordinal() & 0xFF) << 56 | ((long) dtype & 0xFF) << 48 | ((long) op & 0xFF) << 40
                | ((long) algo & 0xFF) << 32 | (root & 0xFFFF_FFFFL);
    }

    public static Descriptor unpack(long shape, long count, long seq) {
        Descriptor d = new Descriptor();
        d.kind = CollectiveKind.fromCode((int) (shape >>> 56) & 0xFF);
        d.dtype = (byte) (shape >>> 48);
        d.op = (byte) (shape >>> 40);
        d.algo = (byte) (shape >>> 32);
        d.root = (int) shape;
        d.count = count;
        d.seq = seq;
        return d;
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder();
        b.append(kind == null ? "?" : kind.name()).append("#").append(seq).append("(count=").append(count);
        if (dtype >= 0) {
            b.append(", dtype=").append(safe(() -> DataType.fromCode(dtype).name(), dtype));
        }
        if (op >= 0) {
            b.append(", op=").append(safe(() -> ReduceOp.fromCode(op).name(), op));
        }
        if (root >= 0) {
            b.append(", root=").append(root);
        }
        if (algo >= 0) {
            b.append(", algo=").append(safe(() -> io.rdma4j.collectives.Algorithm.values()[algo].name(), algo));
        }
        return b.append(")").toString();
    }

    private static String safe(java.util.function.Supplier<String> s, int code) {
        try {
            return s.get();
        } catch (RuntimeException e) {
            return "code " + code;
        }
    }
}
