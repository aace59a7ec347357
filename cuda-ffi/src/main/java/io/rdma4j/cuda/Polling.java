package io.rdma4j.cuda;

import io.rdma4j.cuda.ffi.CudaDriver;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.LockSupport;

/**
 * Bounded waits for streams and events. cuStreamSynchronize / cuEventSynchronize have no timeout,
 * so a hung kernel or copy would hang the caller forever; polling the query function gives a
 * deadline. Spins first (copies of a few MiB finish in microseconds), then yields, then parks
 * briefly, so a long wait costs little CPU and a short one adds little latency.
 */
final class Polling {
    private static final int NOT_READY = CudaDriver.CUDA_ERROR_NOT_READY();
    private static final int SPINS = 200;
    private static final int YIELDS = 100;
    private static final long MAX_PARK_NANOS = 50_000;

    /** A query function: CUDA_SUCCESS when done, CUDA_ERROR_NOT_READY while in progress. */
    interface Query {
        int query(MemorySegment handle);
    }

    private Polling() {
    }

    static void await(Query query, MemorySegment handle, String queryName, Object awaited, long timeoutNanos) {
        if (timeoutNanos < 0) {
            throw new IllegalArgumentException("timeout must be >= 0, got " + timeoutNanos + " ns");
        }
        long start = System.nanoTime();
        boolean interrupted = false;
        try {
            for (int round = 0; ; round++) {
                int r = query.query(handle);
                if (r == CudaResult.SUCCESS) {
                    return;
                }
                if (r != NOT_READY) {
                    throw CudaResult.exception(r, queryName, awaited);
                }
                if (System.nanoTime() - start >= timeoutNanos) {
                    throw new CudaTimeoutException(String.valueOf(awaited), queryName, timeoutNanos);
                }
                if (round < SPINS) {
                    Thread.onSpinWait();
                } else if (round < SPINS + YIELDS) {
                    Thread.yield();
                } else {
                    // a park returns at once while the interrupt is set: the wait would spin on the
                    // query to its deadline; the work goes on either way, so the wait does too,
                    // and the interrupt is the caller's again when it ends
                    interrupted |= Thread.interrupted();
                    LockSupport.parkNanos(MAX_PARK_NANOS);
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** true when done, false while in progress; other results throw. */
    static boolean done(int result, String queryName, Object subject) {
        if (result == NOT_READY) {
            return false;
        }
        CudaResult.check(result, queryName, subject);
        return true;
    }
}
