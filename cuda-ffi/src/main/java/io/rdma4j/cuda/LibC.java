package io.rdma4j.cuda;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/** The two libc calls the CUDA layer needs: the page size (dma-buf ranges) and close(2) (dma-buf fds). */
@SuppressWarnings("restricted") // downcalls with the exact C signatures of close(2) and getpagesize(2)
final class LibC {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle CLOSE = LINKER.downcallHandle(LINKER.defaultLookup().find("close").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final MethodHandle GETPAGESIZE = LINKER.downcallHandle(
            LINKER.defaultLookup().find("getpagesize").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_INT));
    private static final long PAGE_SIZE = pageSize0();

    private LibC() {
    }

    static long pageSize() {
        return PAGE_SIZE;
    }

    private static long pageSize0() {
        try {
            return (int) GETPAGESIZE.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("getpagesize() failed", t);
        }
    }

    /** close(2); returns 0 or -1 (errno is not needed: an fd we own is only ever closed once). */
    static int close(int fd) {
        try {
            return (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw new IllegalStateException("close(" + fd + ") failed", t);
        }
    }
}
