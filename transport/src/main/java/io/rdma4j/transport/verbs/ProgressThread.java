package io.rdma4j.transport.verbs;

import io.rdma4j.transport.IdleStrategy;

import java.lang.System.Logger.Level;
import java.util.function.Consumer;

/**
 * The optional busy-polling completion thread of a verbs transport (RDMA4J_PROGRESS_THREAD): it
 * drives the same progress as callers of test/await do, between polls idling with the configured
 * strategy, optionally pinned to one CPU (RDMA4J_PROGRESS_CPU). Completions are still taken by
 * whoever tests a request; the thread only keeps queues moving (credits returned, CTS entries
 * consumed, batches posted) while the application computes. A pass that throws is a bug or a
 * broken device, never a peer's failure (the transport fails such a connection inside the pass):
 * the thread then stops and hands the error to its owner, which aborts the transport with it, so
 * every pending and later request names the cause instead of waiting for a thread that is gone.
 */
final class ProgressThread implements Runnable {
    private static final System.Logger LOG = System.getLogger(ProgressThread.class.getName());

    /** One pass of progress; returns the work done (0 when idle). */
    interface Progress {
        int progressOnce();
    }

    private final Progress progress;
    private final Consumer<Throwable> onFailure;
    private final IdleStrategy idle;
    private final int cpu;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile String pinFailure;
    private volatile boolean started;
    private volatile Throwable failure;

    /** @param onFailure told once, from the thread, about an exception or error a pass threw */
    ProgressThread(String name, Progress progress, Consumer<Throwable> onFailure, IdleStrategy idle, int cpu) {
        this.progress = progress;
        this.onFailure = onFailure;
        this.idle = idle;
        this.cpu = cpu;
        this.thread = new Thread(this, name);
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    @Override
    public void run() {
        if (cpu >= 0) {
            pinFailure = CpuAffinity.pinCurrentThread(cpu);
            if (pinFailure != null) {
                LOG.log(Level.WARNING, thread.getName() + " runs unpinned: " + pinFailure);
            }
        }
        started = true;
        while (running) {
            int work;
            try {
                work = progress.progressOnce();
            } catch (RuntimeException | Error e) {
                failure = e;
                running = false;
                LOG.log(Level.ERROR, thread.getName() + " failed and stopped", e);
                onFailure.accept(e);
                return;
            }
            idle.idle(work);
        }
    }

    /** Stops the thread and waits up to {@code millis} for it. */
    void stop(long millis) {
        running = false;
        if (Thread.currentThread() != thread) {
            try {
                thread.join(millis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    boolean isAlive() {
        return thread.isAlive();
    }

    /** What a pass threw, if the thread stopped because of it; else null. */
    Throwable failure() {
        return failure;
    }

    /** Null once the thread pinned itself (or was not asked to), else why it could not. */
    String pinFailure() {
        return started ? pinFailure : "not started yet";
    }
}
