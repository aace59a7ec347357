package io.rdma4j.nativesupport.internal;

import java.util.Locale;

/**
 * The rule of rdma4j's on-by-default switches ({@code RDMA4J_SIMD}, {@code RDMA4J_MEMMOVE}): a
 * system property, else an environment variable, turns the feature off with {@code 0},
 * {@code false} or {@code off} (trimmed, any case); anything else leaves it on.
 */
public final class OffSwitch {
    private OffSwitch() {
    }

    /** Whether {@code property} (when set, it wins) or else {@code env} says 0, false or off. */
    public static boolean turnedOff(String property, String env) {
        String setting = property != null ? property : env;
        if (setting == null) {
            return false;
        }
        String s = setting.trim().toLowerCase(Locale.ROOT);
        return s.equals("0") || s.equals("false") || s.equals("off");
    }
}
