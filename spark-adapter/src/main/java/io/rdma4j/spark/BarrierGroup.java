package io.rdma4j.spark;

/**
 * The part of a barrier stage that bootstrapping needs: which task this is, how many there are,
 * an all-gather of short strings and a barrier. {@link SparkBarrierGroup} is Spark's
 * (BarrierTaskContext); another engine with gang scheduling can supply its own.
 */
public interface BarrierGroup {

    /** This task's index, 0 .. size()-1 (the rank). */
    int rank();

    int size();

    /** Blocks until every task has called it; returns every task's message, by rank. */
    String[] allGather(String message);

    /** Blocks until every task has called it. */
    void barrier();

    /** The host other tasks can reach this task's executor at. */
    String host();

    /**
     * Whether the engine asked this task to stop (Spark: the task was killed because another task
     * of the stage failed or the job was cancelled, which by default does not interrupt the
     * task's thread). Polled by whatever waits in the task.
     */
    default boolean stopRequested() {
        return false;
    }
}
