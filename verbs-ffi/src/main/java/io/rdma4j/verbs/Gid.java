package io.rdma4j.verbs;

import java.util.Arrays;
import java.util.HexFormat;

/** A 128-bit global identifier (IB GID, or an IPv6/IPv4-mapped address for RoCE). */
public record Gid(byte[] raw) {
    public static final int BYTES = 16;

    public Gid {
        if (raw.length != BYTES) {
            throw new IllegalArgumentException("a GID has 16 bytes, got " + raw.length);
        }
        raw = raw.clone();
    }

    @Override
    public byte[] raw() {
        return raw.clone();
    }

    public boolean isZero() {
        for (byte b : raw) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }

    /** ::ffff:a.b.c.d, the form RoCE v2 uses for an IPv4 address. */
    public boolean isIpv4Mapped() {
        for (int i = 0; i < 10; i++) {
            if (raw[i] != 0) {
                return false;
            }
        }
        return raw[10] == (byte) 0xff && raw[11] == (byte) 0xff;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Gid g && Arrays.equals(raw, g.raw);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(raw);
    }

    /** IPv6 notation, or ::ffff:a.b.c.d for IPv4-mapped GIDs (as {@code ibv_devinfo -v} prints). */
    @Override
    public String toString() {
        if (isIpv4Mapped()) {
            return "::ffff:" + (raw[12] & 0xff) + "." + (raw[13] & 0xff) + "." + (raw[14] & 0xff) + "." + (raw[15] & 0xff);
        }
        HexFormat hex = HexFormat.of();
        StringBuilder sb = new StringBuilder(39);
        for (int i = 0; i < BYTES; i += 2) {
            if (i > 0) {
                sb.append(':');
            }
            sb.append(hex.toHexDigits(raw[i])).append(hex.toHexDigits(raw[i + 1]));
        }
        return sb.toString();
    }
}
