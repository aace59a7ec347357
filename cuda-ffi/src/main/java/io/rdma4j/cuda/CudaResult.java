package io.rdma4j.cuda;

import io.rdma4j.cuda.ffi.CudaDriver;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.HashMap;
import java.util.Map;

/** Turns CUresult codes into {@link CudaException}s with the driver's own name and description. */
final class CudaResult {
    static final int SUCCESS = CudaDriver.CUDA_SUCCESS();

    private CudaResult() {
    }

    /** Throws unless {@code result} is CUDA_SUCCESS; allocation-free on success. */
    static void check(int result, String function) {
        if (result != SUCCESS) {
            throw exception(result, function, null);
        }
    }

    /** As {@link #check(int, String)}; {@code subject}'s toString() goes into the message, computed only on failure. */
    static void check(int result, String function, Object subject) {
        if (result != SUCCESS) {
            throw exception(result, function, subject);
        }
    }

    static CudaException exception(int result, String function, Object subject) {
        return new CudaException(function, subject == null ? null : String.valueOf(subject), result, name(result),
                description(result));
    }

    /**
     * The driver's name of {@code result}; when the driver does not know it (or the call fails),
     * the name from our header, else a placeholder that still carries the number.
     */
    static String name(int result) {
        String fromDriver = driverText(result, true);
        if (fromDriver != null) {
            return fromDriver;
        }
        String fromHeader = HeaderNames.BY_CODE.get(result);
        return fromHeader != null ? fromHeader : "CUresult " + result;
    }

    static String description(int result) {
        String fromDriver = driverText(result, false);
        return fromDriver != null ? fromDriver
                : "no description (cuGetErrorString does not know this code or failed; see the CUresult "
                + "list in the CUDA Driver API reference)";
    }

    private static String driverText(int result, boolean name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(CudaDriver.C_POINTER);
            int r = name ? CudaDriver.cuGetErrorName(result, out) : CudaDriver.cuGetErrorString(result, out);
            MemorySegment text = out.get(CudaDriver.C_POINTER, 0);
            return r == SUCCESS && !text.equals(MemorySegment.NULL) ? text.getString(0) : null;
        } catch (RuntimeException | LinkageError e) {
            // The library is not loaded or lacks the function: the header's name is all we have.
            return null;
        }
    }

    /** The CUresult names our header declares, read from the generated constants. */
    private static final class HeaderNames {
        static final Map<Integer, String> BY_CODE = read();

        private static Map<Integer, String> read() {
            Map<Integer, String> names = new HashMap<>();
            for (Method m : CudaDriver.class.getMethods()) {
                String n = m.getName();
                if ((n.startsWith("CUDA_ERROR_") || n.equals("CUDA_SUCCESS")) && m.getParameterCount() == 0
                        && m.getReturnType() == int.class && Modifier.isStatic(m.getModifiers())) {
                    try {
                        names.put((Integer) m.invoke(null), n);
                    } catch (ReflectiveOperationException e) {
                        throw new IllegalStateException("cannot read constant " + n, e);
                    }
                }
            }
            return Map.copyOf(names);
        }
    }
}
