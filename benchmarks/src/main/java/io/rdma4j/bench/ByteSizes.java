package io.rdma4j.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Byte counts as nccl-tests writes them on its command line: {@code 8}, {@code 64K}, {@code 256M}, {@code 1G}. */
public final class ByteSizes {
    /** More sizes than this is a typo (e.g. {@code -f 1.01}), not a benchmark. */
    static final int MAX_SIZES = 512;

    private ByteSizes() {
    }

    /** Parses a byte count with an optional binary suffix K, M or G (case-insensitive, optional trailing B). */
    public static long parse(String text) {
        String s = text.trim().toUpperCase(Locale.ROOT);
        if (s.endsWith("B") && s.length() > 1) {
            s = s.substring(0, s.length() - 1); // "64KB" -> "64K", "8B" -> "8"
        }
        long unit = 1;
        if (!s.isEmpty()) {
            switch (s.charAt(s.length() - 1)) {
                case 'K' -> unit = 1L << 10;
                case 'M' -> unit = 1L << 20;
                case 'G' -> unit = 1L << 30;
                default -> unit = 1;
            }
        }
        String digits = unit == 1 ? s : s.substring(0, s.length() - 1);
        long value;
        try {
            value = Long.parseLong(digits);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a byte count: '" + text + "' (expected e.g. 8, 64K, 256M, 1G)");
        }
        if (value < 0) {
            throw new IllegalArgumentException("negative byte count: '" + text + "'");
        }
        try {
            return Math.multiplyExact(value, unit);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("byte count too large: '" + text + "'");
        }
    }

    /** Short human form: 8, 64K, 256M, 1G when exact, else the plain number. */
    public static String format(long bytes) {
        if (bytes >= (1L << 30) && bytes % (1L << 30) == 0) {
            return bytes / (1L << 30) + "G";
        }
        if (bytes >= (1L << 20) && bytes % (1L << 20) == 0) {
            return bytes / (1L << 20) + "M";
        }
        if (bytes >= (1L << 10) && bytes % (1L << 10) == 0) {
            return bytes / (1L << 10) + "K";
        }
        return Long.toString(bytes);
    }

    /**
     * The sizes nccl-tests visits: from {@code min} to {@code max} inclusive, multiplying by
     * {@code factor} when it is above 1, else adding {@code step}.
     */
    public static List<Long> series(long min, long max, double factor, long step) {
        if (min > max) {
            throw new IllegalArgumentException("minimum size " + min + " exceeds maximum size " + max);
        }
        boolean geometric = factor > 1;
        if (geometric && min == 0) {
            throw new IllegalArgumentException("a step factor cannot grow from a minimum size of 0 (use -b >= 1)");
        }
        if (!geometric && step <= 0) {
            throw new IllegalArgumentException("need a step factor > 1 (-f) or a positive step in bytes (-i)");
        }
        List<Long> sizes = new ArrayList<>();
        long s = min;
        while (s <= max) {
            if (sizes.size() == MAX_SIZES) {
                throw new IllegalArgumentException("more than " + MAX_SIZES + " sizes between " + min + " and " + max
                        + "; use a larger step");
            }
            sizes.add(s);
            long next = geometric ? (long) Math.floor(s * factor) : s + step;
            if (next <= s) {
                next = s + 1; // a factor close to 1 must still make progress
            }
            s = next;
        }
        return sizes;
    }
}
