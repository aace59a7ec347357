package io.rdma4j.collectives.reduce;

import io.rdma4j.nativesupport.internal.OffSwitch;

/**
 * Whether the reduction kernels use {@link VectorKernels}: when the JVM runs with
 * {@code --add-modules jdk.incubator.vector} (the module is in the boot layer), its JIT has C2,
 * and neither {@code -Drdma4j.simd=false} nor {@code RDMA4J_SIMD=0|false} turns it off. Without
 * the module the scalar kernels run (same results, 2-4x slower on cache-resident data) and
 * {@link VectorKernels} is never loaded, so the library needs no flag to work.
 *
 * <p>Only C2 turns Vector API calls into vector instructions. Interpreted ({@code -Xint}) or
 * C1-only code ({@code -XX:TieredStopAtLevel=1}, {@code -XX:CompilationMode=quick-only}, which
 * HotSpot reports as "emulated-client" in {@code java.vm.info}) allocates an object per vector
 * operation: in the Soft-RoCE guest, whose JVMs run C1-only, a 2-rank 4 KiB float allreduce took
 * 3.4 ms with the SIMD kernel and 1.4 ms with the scalar one (two boots, docs/verbs-path.md).
 * Such a JVM gets the scalar kernels. (Tiered levels 2 and 3 without C2 are not recognised.)
 *
 * <p>Such a JVM's scalar kernels also work in {@link KernelLoops#STAGED blocks of heap arrays}.
 * C1 does not inline the chain of calls behind a {@code MemorySegment} element access: a loop
 * {@code d[i] = a[i] + b[i]} over 1024 floats in native segments took 70-80 us with
 * {@code -XX:TieredStopAtLevel=1} on a 2-core EPYC host and 1.3 ms in the Soft-RoCE guest, where
 * copying the blocks into float arrays, adding there and copying back took 2 and 40 us; C2
 * compiles both forms to the same plain loop (0.3-0.4 us). To measure again, time the two loops
 * in a JVM started with and without {@code -XX:TieredStopAtLevel=1}.
 */
public final class Simd {
    private static final String MODULE = "jdk.incubator.vector";
    private static final boolean MODULE_PRESENT = ModuleLayer.boot().findModule(MODULE).isPresent();
    private static final String VM_INFO = System.getProperty("java.vm.info", "");
    private static final boolean JIT_COMPILES_VECTORS = compilesVectors(VM_INFO);
    static final boolean ENABLED = decide(System.getProperty("rdma4j.simd"), System.getenv("RDMA4J_SIMD"),
            MODULE_PRESENT && JIT_COMPILES_VECTORS);
    static final KernelLoops LOOPS = loops(ENABLED, JIT_COMPILES_VECTORS);

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
        if (!MODULE_PRESENT) {
            return "scalar (add --add-modules " + MODULE + " for SIMD kernels)";
        }
        return JIT_COMPILES_VECTORS ? "scalar (SIMD turned off)"
                : "scalar, staged in heap arrays (no C2 compiler: " + VM_INFO + ")";
    }

    /** Whether a JVM whose {@code java.vm.info} is {@code vmInfo} compiles Vector API calls to vector code (C2). */
    static boolean compilesVectors(String vmInfo) {
        return !vmInfo.contains("interpreted mode") && !vmInfo.contains("emulated-client");
    }

    /** The loops of a JVM whose vector kernels are {@code simd} and whose JIT has C2 or not. */
    static KernelLoops loops(boolean simd, boolean jitHasC2) {
        if (!jitHasC2) {
            return KernelLoops.STAGED;
        }
        return simd ? KernelLoops.VECTOR : KernelLoops.SEGMENT;
    }

    static boolean decide(String property, String env, boolean modulePresent) {
        return modulePresent && !OffSwitch.turnedOff(property, env);
    }
}
