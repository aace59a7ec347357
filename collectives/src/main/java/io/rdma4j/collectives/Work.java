package io.rdma4j.collectives;

import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Handle of an asynchronous collective. Works of one communicator complete in the order they
 * were issued. {@link #await(Duration)} rethrows the collective's own exception
 * ({@link CollectiveException} and subclasses).
 */
public final class Work {
    private final CompletableFuture<Void> future;
    private final String what;

    Work(CompletableFuture<Void> future, String what) {
        this.future = future;
        this.what = what;
    }

    /** A future completed when the collective completes (exceptionally if it failed). */
    public CompletableFuture<Void> future() {
        return future;
    }

    public boolean isDone() {
        return future.isDone();
    }

    /**
     * Waits for completion.
     *
     * @throws CollectiveTimeoutException if it did not complete within {@code timeout} (the
     *                                    collective itself keeps running)
     * @throws CollectiveException        if the collective failed
     */
    public void await(Duration timeout) {
        try {
            future.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new CollectiveTimeoutException(-1, what + " did not complete within " + timeout.toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CollectiveException(-1, "interrupted while waiting for " + what, e);
        } catch (ExecutionException | CompletionException e) {
            throw rethrow(e.getCause());
        } catch (CancellationException e) {
            throw new CollectiveException(-1, what + " was cancelled", e);
        }
    }

    /** Waits without a bound of its own (the collective's no-progress timeout still applies). */
    public void await() {
        try {
            future.join();
        } catch (CompletionException e) {
            throw rethrow(e.getCause());
        } catch (CancellationException e) {
            throw new CollectiveException(-1, what + " was cancelled", e);
        }
    }

    static RuntimeException rethrow(Throwable t) {
        if (t instanceof CollectiveException c) {
            return c;
        }
        if (t instanceof RuntimeException r) {
            return r;
        }
        return new CollectiveException(-1, String.valueOf(t), t);
    }

    @Override
    public String toString() {
        return "Work[" + what + (future.isDone() ? ", done]" : ", pending]");
    }
}
