package io.rdma4j.verbs;

import java.lang.foreign.MemorySegment;
import java.util.function.Function;
import java.util.function.ToIntFunction;

/** Turns the two ways verbs report failure into exceptions that name the call and its object. */
@SuppressWarnings("restricted")
final class Results {
    private Results() {
    }

    /**
     * Checks a pointer result: NULL means failure, reported with the errno the call captured.
     * {@code size} bounds the returned segment to the struct it points at.
     */
    static MemorySegment checkPointer(MemorySegment result, MemorySegment captureState, String what, long size) {
        if (result.equals(MemorySegment.NULL)) {
            throw new VerbsException(what, Errno.captured(captureState));
        }
        return result.reinterpret(size);
    }

    /**
     * Hands a native object that a verb just created to its Java owner ({@code wrap}); if that
     * fails (its parent was closed meanwhile, so it cannot adopt a child), frees the object with
     * {@code destroy}, whose own result is not reported (the wrap's failure is), so that nothing
     * outlives the failed call.
     */
    static <T> T own(MemorySegment handle, ToIntFunction<MemorySegment> destroy, Function<MemorySegment, T> wrap) {
        try {
            return wrap.apply(handle);
        } catch (RuntimeException | Error e) {
            destroy.applyAsInt(handle);
            throw e;
        }
    }

    /** Checks a verb that returns 0 or an errno value (some providers return it negated). */
    static void checkReturn(int rc, String what) {
        if (rc != 0) {
            throw new VerbsException(what, Math.abs(rc));
        }
    }
}
