package io.rdma4j.spark;

import org.apache.spark.BarrierTaskContext;
import org.apache.spark.BarrierTaskInfo;

/**
 * A {@link BarrierGroup} over Spark's {@link BarrierTaskContext}: rank = partition id, messages
 * through {@code allGather}, host from the task infos (the executor's address as Spark's driver
 * knows it, so other executors can reach it).
 */
public final class SparkBarrierGroup implements BarrierGroup {
    private final BarrierTaskContext ctx;
    private final BarrierTaskInfo[] infos;

    public SparkBarrierGroup(BarrierTaskContext ctx) {
        this.ctx = ctx;
        this.infos = ctx.getTaskInfos();
    }

    /** The group of the barrier task running on the calling thread. */
    public static SparkBarrierGroup current() {
        return new SparkBarrierGroup(BarrierTaskContext.get());
    }

    @Override
    public int rank() {
        return ctx.partitionId();
    }

    @Override
    public int size() {
        return infos.length;
    }

    @Override
    public String[] allGather(String message) {
        return ctx.allGather(message);
    }

    @Override
    public void barrier() {
        ctx.barrier();
    }

    /** Spark's kill flag: set when the task is killed, whether or not its thread is interrupted too. */
    @Override
    public boolean stopRequested() {
        return ctx.isInterrupted();
    }

    @Override
    public String host() {
        return hostOf(infos[rank()].address());
    }

    /** "host:port", "[v6]:port" or a bare host -> the host. */
    static String hostOf(String address) {
        if (address.startsWith("[")) {
            int end = address.indexOf(']');
            return end > 0 ? address.substring(1, end) : address;
        }
        int colon = address.lastIndexOf(':');
        return colon > 0 && address.indexOf(':') == colon ? address.substring(0, colon) : address;
    }
}
