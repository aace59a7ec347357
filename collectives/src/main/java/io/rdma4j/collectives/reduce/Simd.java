package io.rdma4j.collectives.reduce;

import java.util.Locale;

/**
 * Whether the reduction kernels use {@link VectorKernels}: when the JVM runs with
 * {@code --add-modules jdk.incubator.vector} (the module is in the boot layer) and neither
 * {@code -Drdma4j.simd=false} nor {@code RDMA4J_SIMD=0|false} turns it off. Without the module
 * the scalar kernels run (same results, 2-4x slower on cache-resident data) and
 * {@link VectorKernels} is never loaded, so the library needs no flag to work.
 */
public final class Simd {
    private static final String MODULE = "jdk.incubator.vector";
    private static final boolean MODULE_PRESENT = ModuleLayer.boot().findModule(MODULE).isPresent();
    static final boolean ENABLED = decide(System.getProperty("rdma4j.simd"), System.getenv("RDMA4J_SIMD"), MODULE_PRESENT);

    private Simd() {
    }

    /** Whether this JVM's reduction kernels are the vectorized ones. */
    public static boolean enabled() {
        return ENABLED;
    }

    /** One line for logs and benchmark headers. */
    public static String describe() {
        if (ENABLED) {
            return "simd (" + MODULE + ")";
        }
        return "scalar (" + (MODULE_PRESENT ? "SIMD turned off"
                : "add --add-modules " + MODULE + " for SIMD kernels") + ")";
    }

    static boolean decide(String property, String env, boolean modulePresent) {
        String setting = property != null ? property : env;
        if (setting != null) {
            String s = setting.trim().toLowerCase(Locale.ROOT);
            if (s.equals("0") || s.equals("false") || s.equals("off")) {
                return false;
            }
        }
        return modulePresent;
    }
}
